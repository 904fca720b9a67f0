"""Deterministic, realistic generated memories for the benchmarks.

One fictional owner (Ana, a software engineer with a partner, two kids, a dog, a homelab and
an agent project) and her agent's memory over up to ten years:

- a category tree of 42 paths (10 top-level nodes, depth <= 3, <= 10 children per node),
  each with a short description: it fits the limits of SPEC §2 without rebalancing;
- facts built from 105 templates (about 12% of facts in Simplified Chinese) filled from
  vocabularies of people, pets, places, tools, services, foods, dates and numbers, so texts
  vary the way an agent's notes do; some carry URLs, shell commands and file paths, in the
  text or only in the metadata;
- ages from 0 to 3,650 days (denser in recent years, as memories accumulate), importances
  skewed towards the middle, a few very important ones;
- queries the agent would ask (English and Chinese, some with no answer), and 5-10 turn
  conversations for the write path.

Everything comes from `random.Random(seed)`: the same seed gives the same data.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Iterator, Optional

DAY = 86_400.0

# -- the tree -------------------------------------------------------------------------------

TREE: list[tuple[str, str]] = [
    ("owner", "Owner profile and preferences"),
    ("owner/profile", "Name, job, where she lives"),
    ("owner/preferences", "Likes and dislikes"),
    ("owner/preferences/food", "Food and drink"),
    ("owner/schedule", "Routines, hours, timezone"),
    ("owner/learning", "Courses and languages"),
    ("family", "Family members"),
    ("family/partner", "Partner"),
    ("family/kids", "Children, school, activities"),
    ("family/parents", "Parents and in-laws"),
    ("family/pets", "Dog and cat"),
    ("work", "Job and colleagues"),
    ("work/team", "Team and people"),
    ("work/meetings", "Meetings and decisions"),
    ("work/oncall", "On-call and incidents"),
    ("projects", "Active projects"),
    ("projects/evoclaw", "EvoClaw agent framework"),
    ("projects/evoclaw/architecture", "Design decisions"),
    ("projects/evoclaw/deploy", "Releases and deployment"),
    ("projects/garden-bot", "ESP32 watering robot"),
    ("projects/homelab", "Home servers"),
    ("projects/website", "Personal website"),
    ("home", "House and household"),
    ("home/maintenance", "Repairs and trades"),
    ("home/shopping", "Things to buy"),
    ("health", "Health and fitness"),
    ("health/appointments", "Doctors and dentists"),
    ("health/fitness", "Running and gym"),
    ("health/medication", "Medicines and allergies"),
    ("tech", "Tools, servers, accounts"),
    ("tech/servers", "Machines and services"),
    ("tech/devtools", "Editors, shells, git"),
    ("tech/accounts", "Logins and subscriptions"),
    ("travel", "Trips and plans"),
    ("travel/trips", "Past and planned trips"),
    ("travel/bookings", "Flights, hotels, trains"),
    ("finance", "Money matters"),
    ("finance/bills", "Bills and utilities"),
    ("finance/taxes", "Taxes and paperwork"),
    ("lessons", "Lessons learned"),
    ("lessons/ops", "Operational lessons"),
    ("lessons/communication", "How to talk to the owner"),
]
PATHS = [p for p, _ in TREE]

# -- vocabularies ---------------------------------------------------------------------------

V: dict[str, list[str]] = {
    "owner": ["Ana"],
    "partner": ["Tomás", "Tom"],
    "kid": ["Lucía", "Mateo"],
    "parent": ["Carmen", "Jorge", "Helen", "Peter"],
    "pet": ["Pixel", "Miso"],
    "colleague": ["Priya", "Dmitri", "Kwame", "Sofia", "Jonas", "Mei", "Rahul", "Elena",
                  "Marcus", "Yuki", "Fatima", "Oliver", "Chloe", "Ibrahim", "Noor"],
    "friend": ["Sara", "Ben", "Hannah", "Leo", "Aisha", "Diego", "Grace", "Omar"],
    "drink": ["oat flat white", "green tea", "jasmine tea", "sparkling water", "espresso",
              "rooibos", "matcha latte", "decaf americano", "chai", "hot chocolate"],
    "food": ["ramen", "paella", "dal", "sushi", "tacos", "pho", "lasagne", "dumplings",
             "shakshuka", "bibimbap", "risotto", "falafel", "mapo tofu", "pad thai"],
    "dislike": ["coriander", "olives", "mushrooms", "blue cheese", "liquorice", "anchovies",
                "very spicy food", "raw onion"],
    "city": ["Lisbon", "Kyoto", "Berlin", "Edinburgh", "Valencia", "Copenhagen", "Oaxaca",
             "Seoul", "Porto", "Vienna", "Montreal", "Chengdu", "Reykjavik", "Bologna"],
    "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "month": ["January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December"],
    "service": ["api-gateway", "billing-worker", "search-indexer", "auth-service",
                "notification-hub", "ingest-pipeline", "report-builder", "media-proxy",
                "sync-daemon", "scheduler", "webhook-relay", "metrics-exporter"],
    "host": ["nas01", "pi-garden", "pi-kitchen", "nuc-lab", "vps-fra1", "vps-ams2",
             "backup-box", "gpu-rig", "router-lab", "mini-k3s"],
    "tool": ["Grafana", "Prometheus", "Home Assistant", "Jellyfin", "Nextcloud", "Gitea",
             "Tailscale", "WireGuard", "Caddy", "Restic", "Syncthing", "Pi-hole", "Vaultwarden",
             "Uptime Kuma", "Immich", "Paperless-ngx"],
    "lang": ["Go", "Rust", "Python", "TypeScript", "Kotlin", "Elixir", "Zig"],
    "editor": ["Neovim", "VS Code", "Helix", "Emacs", "Zed"],
    "topic": ["retries", "rate limits", "schema migrations", "cache invalidation",
              "backpressure", "idempotency keys", "feature flags", "connection pools",
              "log retention", "tracing", "load shedding", "blue-green deploys"],
    "component": ["the outbox", "the tree index", "the retriever", "the distiller",
                  "the sync engine", "the hot memory pruner", "the CLI", "the restore path",
                  "the LLM navigator", "the consolidation job"],
    "sensor": ["soil moisture", "humidity", "temperature", "light", "water level", "flow"],
    "plant": ["tomatoes", "basil", "chillies", "strawberries", "courgettes", "lettuce",
              "mint", "peppers", "beans"],
    "doctor": ["Dr. Okafor", "Dr. Lindqvist", "Dr. Haddad", "Dr. Moreau", "Dr. Tanaka",
               "Dr. Nowak"],
    "clinic": ["Riverside Dental", "Park Lane Surgery", "City Physio", "Northgate Clinic",
               "Eastside Opticians"],
    "medicine": ["ibuprofen", "cetirizine", "vitamin D", "salbutamol inhaler", "omeprazole",
                 "melatonin"],
    "allergen": ["penicillin", "peanuts", "sesame", "cat dander", "birch pollen", "shellfish"],
    "sport": ["5k run", "10k run", "swim", "yoga class", "climbing session", "cycle ride",
              "gym session", "parkrun"],
    "trade": ["plumber", "electrician", "roofer", "boiler engineer", "carpenter",
              "window cleaner", "gardener"],
    "house_part": ["boiler", "kitchen tap", "bathroom fan", "garden fence", "loft hatch",
                   "front door lock", "dishwasher", "washing machine", "gutter"],
    "item": ["running shoes", "a new router", "printer ink", "school shoes", "a rice cooker",
             "LED bulbs", "a USB-C dock", "dog food", "a standing desk", "SD cards",
             "a soldering iron", "raincoats"],
    "shop": ["the hardware store", "the market", "IKEA", "the bike shop", "the pharmacy",
             "the Asian supermarket", "the garden centre"],
    "bill": ["electricity", "water", "broadband", "council tax", "phone contract",
             "car insurance", "home insurance", "gym membership", "streaming bundle"],
    "airline": ["TAP", "KLM", "Iberia", "Lufthansa", "easyJet", "Finnair", "JAL"],
    "hotel": ["Casa Azul", "Hotel Nordlys", "The Linden", "Ryokan Hanaya", "Pension Rosa",
              "Harbour Inn"],
    "course": ["Mandarin HSK 3", "Spanish B2", "ML systems design", "woodworking basics",
               "piano grade 2", "photography night class"],
    "book": ["Designing Data-Intensive Applications", "The Pragmatic Programmer",
             "Project Hail Mary", "Thinking in Systems", "The Three-Body Problem",
             "A Philosophy of Software Design", "Klara and the Sun"],
    "feeling": ["happy", "stressed", "relieved", "excited", "tired", "frustrated", "proud",
                "worried"],
    "account": ["GitHub", "AWS", "Hetzner", "Fastmail", "Cloudflare", "Backblaze B2",
                "Tailscale", "Spotify", "the bank app"],
    "domain": ["github.com/ana-dev", "docs.evoclaw.dev", "grafana.lab.home", "wiki.lab.home",
               "status.evoclaw.dev", "ana.dev", "gitea.lab.home", "ci.evoclaw.dev",
               "pkg.go.dev", "docs.python.org", "turso.tech/docs", "esphome.io"],
    "cmd": ["docker compose up -d", "systemctl restart caddy", "git push origin main",
            "kubectl rollout restart deploy/api", "restic backup /srv", "make release",
            "uv pip install -e .", "tailscale up --ssh", "esphome run garden.yaml",
            "pg_dump -Fc app > app.dump", "journalctl -u sqld -f", "zfs snapshot tank@daily",
            "go test ./...", "cargo build --release", "ansible-playbook site.yml"],
    "fpath": ["~/projects/evoclaw/config.toml", "/etc/caddy/Caddyfile", "~/notes/taxes.md",
              "/srv/backups/restic.env", "./deploy/docker-compose.yml",
              "~/garden-bot/firmware/main.cpp", "/var/lib/sqld/data", "~/.ssh/config",
              "/etc/wireguard/wg0.conf", "./scripts/release.sh"],
}

# Chinese vocabularies (the owner is learning Mandarin; her in-laws in Chengdu write in Chinese).
VZ: dict[str, list[str]] = {
    "person": ["妈妈", "爸爸", "外婆", "小李", "王老师", "陈阿姨", "张医生", "刘经理"],
    "drink": ["茉莉花茶", "绿茶", "咖啡", "豆浆", "普洱茶", "菊花茶"],
    "food": ["火锅", "饺子", "麻婆豆腐", "担担面", "小笼包", "回锅肉", "宫保鸡丁", "酸辣粉"],
    "city": ["成都", "北京", "上海", "杭州", "西安", "广州", "重庆", "昆明"],
    "thing": ["新电脑", "自行车", "电饭锅", "书包", "耳机", "雨伞", "手表"],
    "time": ["周末", "每天早上", "晚饭后", "下个月", "春节前", "暑假", "星期三下午"],
    "topic": ["服务器", "备份", "中文课", "体检", "搬家", "机票", "生日聚会", "花园机器人"],
}

# -- fact templates -------------------------------------------------------------------------
# (category, template, importance centre). {x} slots draw from V, {z:x} from VZ;
# {n} a small number, {d} a day of month, {y} a year, {t} a time, {v} a version,
# {url} {cmd} {fpath} also attach metadata.

TEMPLATES: list[tuple[str, str, float]] = [
    ("owner/profile", "{owner} works as a staff {lang} engineer and has been remote since {y}.", 0.8),
    ("owner/profile", "{owner} moved to a flat near the river in {month} {y}; commute is {n} minutes by bike.", 0.7),
    ("owner/profile", "{owner} prefers to be called Ana, never Anita; she signs emails 'A.'", 0.85),
    ("owner/preferences", "{owner} dislikes {dislike} and always asks restaurants to leave it out.", 0.6),
    ("owner/preferences", "{owner} likes short answers in the morning and longer explanations after {t}.", 0.7),
    ("owner/preferences", "{owner} prefers {editor} with a dark theme and hates notification sounds.", 0.5),
    ("owner/preferences/food", "{owner}'s usual coffee order is an {drink}; on {weekday}s she switches to {drink}.", 0.5),
    ("owner/preferences/food", "Favourite dinner this month: {food} from the place on {city} Street, about £{n}.", 0.4),
    ("owner/preferences/food", "{owner} tried {food} in {city} and wants to cook it at home; recipe saved at {url}.", 0.4),
    ("owner/schedule", "{owner} does deep work from 9 to {t} and takes calls only after lunch.", 0.7),
    ("owner/schedule", "On {weekday}s {owner} does the school run, so no meetings before 9:30.", 0.6),
    ("owner/schedule", "{owner} is in the Europe/Lisbon timezone; in {month} she will be in {city} (UTC+{n}).", 0.6),
    ("owner/learning", "{owner} is taking {course}; lesson {n} is on {weekday} at {t}.", 0.5),
    ("owner/learning", "{owner} finished reading {book} and rated it {n}/10.", 0.3),
    ("owner/learning", "Homework for {course}: {n} exercises, due {weekday} {d} {month}.", 0.4),
    ("family/partner", "{partner}'s birthday is {d} {month}; he wants {item} this year.", 0.8),
    ("family/partner", "{partner} works late on {weekday}s, so {owner} picks up {kid} from school.", 0.5),
    ("family/partner", "{partner} is allergic to {allergen}; keep it out of shared meals.", 0.9),
    ("family/kids", "{kid} has {sport} practice every {weekday} at {t}; bring water and a snack.", 0.5),
    ("family/kids", "{kid}'s school trip to {city} is on {d} {month}; the consent form is due {weekday}.", 0.6),
    ("family/kids", "{kid} lost a tooth on {d} {month} and the tooth fairy paid £{n}.", 0.2),
    ("family/kids", "{kid} is reading {book} with {partner} at bedtime, chapter {n}.", 0.3),
    ("family/parents", "{parent} calls every {weekday} evening; {owner} likes to have the kids say hello.", 0.5),
    ("family/parents", "{parent} is visiting from {city} from {d} {month} for {n} days.", 0.6),
    ("family/parents", "{parent}'s hip surgery went well on {d} {month}; physio twice a week.", 0.7),
    ("family/pets", "{pet} the dog needs her booster vaccination in {month}; vet is {clinic}.", 0.6),
    ("family/pets", "{pet} eats {n}g of dry food twice a day; no chicken, it upsets her stomach.", 0.6),
    ("family/pets", "{pet} was groomed on {d} {month}; next appointment in {n} weeks.", 0.3),
    ("work/team", "{colleague} joined the team as a {lang} engineer in {month}; onboarding buddy is {colleague}.", 0.5),
    ("work/team", "{colleague} is out on parental leave until {month}; {colleague} covers reviews.", 0.5),
    ("work/team", "{owner}'s manager {colleague} wants the quarterly review doc by {weekday} {d} {month}.", 0.7),
    ("work/meetings", "Decision in the {weekday} architecture meeting: {service} moves to {lang} by Q{q}.", 0.7),
    ("work/meetings", "Retro notes: {topic} caused {n} incidents last quarter; {colleague} owns the fix.", 0.6),
    ("work/meetings", "1:1 with {colleague} on {weekday}: discussed {topic} and a promotion case.", 0.5),
    ("work/oncall", "Incident on {d} {month}: {service} ran out of connections; fixed with `{cmd}`.", 0.7),
    ("work/oncall", "{owner} is on call the week of {d} {month}; swap requested with {colleague}.", 0.6),
    ("work/oncall", "Runbook for {service} restarts lives at {url}; page {colleague} if it fails twice.", 0.8),
    ("projects/evoclaw", "EvoClaw v{v} released on {d} {month}; changelog at {url}.", 0.6),
    ("projects/evoclaw", "{owner} wants {component} to handle {topic} before the next release.", 0.6),
    ("projects/evoclaw", "Benchmark: {component} went from {n}0 ms to {n} ms after the index change.", 0.5),
    ("projects/evoclaw/architecture", "Decided that {component} stays local-first; the cloud only sees the outbox.", 0.8),
    ("projects/evoclaw/architecture", "Design note: {component} must survive {topic}; see {fpath}.", 0.7),
    ("projects/evoclaw/architecture", "Rejected libSQL embedded replicas for {component}: no armv7 wheels.", 0.6),
    ("projects/evoclaw/deploy", "Deploy EvoClaw docs with `{cmd}` from the repo root.", 0.7),
    ("projects/evoclaw/deploy", "Staging sqld for EvoClaw runs on {host}; token rotates every {n} days.", 0.7),
    ("projects/evoclaw/deploy", "Release checklist v{v}: tag, `{cmd}`, update {url}.", 0.6),
    ("projects/garden-bot", "Garden bot waters the {plant} when {sensor} drops below {n}%.", 0.5),
    ("projects/garden-bot", "Flashed the ESP32 firmware with `{cmd}`; the {sensor} sensor needed recalibrating.", 0.5),
    ("projects/garden-bot", "The {plant} bed got {n} litres on {d} {month}; pump ran {n} minutes.", 0.2),
    ("projects/homelab", "{tool} runs on {host} behind Caddy at {url}.", 0.6),
    ("projects/homelab", "{host} disk is {n}% full; prune old snapshots with `{cmd}`.", 0.6),
    ("projects/homelab", "Moved {tool} from {host} to {host} on {d} {month}; config in {fpath}.", 0.5),
    ("projects/website", "The personal site at {url} is built with Hugo; publish with `{cmd}`.", 0.5),
    ("projects/website", "Draft post about {topic} is {n}% done; {owner} wants it out by {month}.", 0.4),
    ("home/maintenance", "The {trade} fixed the {house_part} on {d} {month}; cost £{n}0.", 0.5),
    ("home/maintenance", "The {house_part} is making noise again; call the {trade} ({colleague}'s recommendation).", 0.5),
    ("home/maintenance", "Annual {house_part} service due in {month}; last one cost £{n}5.", 0.4),
    ("home/shopping", "Buy {item} at {shop} this {weekday}.", 0.3),
    ("home/shopping", "{owner} ordered {item} on {d} {month}; tracking at {url}.", 0.3),
    ("home/shopping", "Running low on {item}; {shop} had a discount last time.", 0.2),
    ("health/appointments", "Dentist appointment with {doctor} at {clinic} on {weekday} {d} {month} at {t}.", 0.7),
    ("health/appointments", "{owner}'s blood test results came back normal on {d} {month}; retest in {n} months.", 0.6),
    ("health/appointments", "{kid}'s eye test at {clinic} on {d} {month}; bring the old glasses.", 0.6),
    ("health/fitness", "{owner} did a {sport} on {weekday}: {n} minutes, felt {feeling}.", 0.2),
    ("health/fitness", "Training plan: {sport} three times a week until the {city} half marathon in {month}.", 0.5),
    ("health/medication", "{owner} takes {medicine} in the morning; refill due around {d} {month}.", 0.8),
    ("health/medication", "{owner} is allergic to {allergen}: tell every new doctor.", 0.95),
    ("tech/servers", "{host} runs {tool} and {tool}; SSH via Tailscale only.", 0.6),
    ("tech/servers", "Backups of {host} go to Backblaze every night with `{cmd}`.", 0.7),
    ("tech/servers", "The sqld data for the agent lives in {fpath} on {host}.", 0.6),
    ("tech/devtools", "{owner} switched to {editor}; her config is in {fpath}.", 0.4),
    ("tech/devtools", "Useful alias: `{cmd}` for the {service} repo.", 0.5),
    ("tech/devtools", "{lang} toolchain pinned to version {v} for {service}.", 0.4),
    ("tech/accounts", "The {account} account uses the hardware key; recovery codes in the safe.", 0.8),
    ("tech/accounts", "{account} subscription renews on {d} {month} at £{n}/month.", 0.4),
    ("tech/accounts", "{owner} rotated the {account} token on {d} {month}; docs at {url}.", 0.5),
    ("travel/trips", "Trip to {city} planned for {month} {y}: {n} nights, kids included.", 0.6),
    ("travel/trips", "In {city} {owner} loved the {food} place near the station; go back next time.", 0.3),
    ("travel/trips", "{owner} and {partner} want to visit {city} for their anniversary in {month}.", 0.5),
    ("travel/bookings", "Flight {airline} to {city} on {d} {month} at {t}; booking ref {ref}.", 0.7),
    ("travel/bookings", "Hotel {hotel} in {city} booked for {n} nights; check-in after {t}.", 0.6),
    ("travel/bookings", "Train to {city} on {weekday} {d} {month}; seats {n}A and {n}B.", 0.5),
    ("finance/bills", "The {bill} bill went up to £{n}0 a month from {month}.", 0.5),
    ("finance/bills", "{bill} is paid by direct debit on the {d}th; account ends in {n}{n}.", 0.5),
    ("finance/bills", "Switched {bill} provider on {d} {month}; saves about £{n} a month.", 0.4),
    ("finance/taxes", "Self-assessment for {y} filed on {d} {month}; receipts in {fpath}.", 0.7),
    ("finance/taxes", "{owner} needs the P60 and the {bill} receipts before {month}.", 0.6),
    ("lessons/ops", "Lesson: never run `{cmd}` on {host} without a fresh backup first.", 0.9),
    ("lessons/ops", "Lesson: test {topic} on staging before touching {service} in production.", 0.9),
    ("lessons/ops", "Lesson: when {service} alerts at night, check {tool} before paging {colleague}.", 0.8),
    ("lessons/communication", "{owner} prefers bullet points and concrete next steps, not long essays.", 0.9),
    ("lessons/communication", "Don't remind {owner} about {topic} on {weekday}s; she finds it stressful.", 0.8),
    ("lessons/communication", "When {owner} is {feeling}, keep replies short and offer one clear option.", 0.8),
]

TEMPLATES_ZH: list[tuple[str, str, float]] = [
    ("family/parents", "{z:person}喜欢喝{z:drink}，{z:time}常常和孩子们视频聊天。", 0.5),
    ("family/parents", "{z:person}下个月从{z:city}来看我们，要住{n}天。", 0.6),
    ("family/parents", "{z:person}的生日是{m}月{d}日，记得提前准备礼物。", 0.7),
    ("owner/learning", "中文课第{n}课：学了关于{z:topic}的生词，作业{z:time}交。", 0.4),
    ("owner/learning", "Ana 用中文写了一篇关于{z:food}的短文，老师给了{n}分。", 0.3),
    ("owner/preferences/food", "Ana 最喜欢的川菜是{z:food}，但是不要太辣。", 0.5),
    ("owner/preferences/food", "在{z:city}吃过的{z:food}特别好吃，想在家里学着做。", 0.3),
    ("travel/trips", "{z:time}全家去{z:city}旅行，大概{n}天，要提前订酒店。", 0.6),
    ("travel/bookings", "去{z:city}的高铁票已经订好了，{m}月{d}日出发。", 0.6),
    ("home/shopping", "{z:time}要去买{z:thing}，预算大概{n}00元。", 0.3),
    ("health/appointments", "{z:person}提醒：{m}月{d}日要去医院做体检，早上不要吃东西。", 0.7),
    ("projects/homelab", "家里的{z:topic}出了问题，{z:person}说要重新设置。", 0.4),
]

# Clauses that situate a note in time or add a detail, as real notes do (most facts get one).
SUFFIXES = [
    " (noted {weekday} {d} {month})", " Follow up in {n} days.", " {partner} agreed.",
    " Mentioned again on {d} {month}.", " Confirmed by {colleague}.", " Priority {q} of 4.",
    " Ask {partner} first.", " Said on the {weekday} call.", " Costs about £{n}.",
    " Reminder set for {t}.", " Came up while talking about {topic}.", " Seen in {city}.",
]
SUFFIXES_ZH = ["（{m}月{d}日记录）", "，{z:person}也同意了。", "，{z:time}再确认一下。", "，大概{n}元。"]

CONVERSATION_TURNS_USER = [
    "Can you remind me when {kid}'s {sport} practice is this week?",
    "I just booked the flight to {city} with {airline}, it's on {d} {month} at {t}.",
    "{partner} says the {house_part} is leaking again, can you find the {trade}'s number?",
    "We decided to move {service} to {lang}; {colleague} will lead it.",
    "I deployed the docs with `{cmd}` and it worked first time.",
    "Please remember that {pet} has the vet on {weekday} {d} {month}.",
    "I'm feeling {feeling} about the release, {component} still breaks on {topic}.",
    "The {bill} bill went up again, it's £{n}0 now.",
    "My mum wants to visit from {city} in {month}, for about {n} days.",
    "I finished {book}, honestly it was great.",
    "Add {item} to the shopping list, we need it before {weekday}.",
    "The backup on {host} failed last night, the log is in {fpath}.",
    "妈妈说{z:time}想吃{z:food}。",
    "我们{z:time}去{z:city}，记得订酒店。",
]
CONVERSATION_TURNS_AGENT = [
    "Got it, I'll keep that in mind.",
    "Noted. Do you want a reminder the day before?",
    "Thanks, I've written that down. Anything else for today?",
    "Understood. Last time the {trade} came on {d} {month}.",
    "Okay. I'll remind you on {weekday} morning.",
    "Sure, the runbook is at {url} if you need it.",
    "That sounds {feeling}; shall I block an hour on {weekday} for it?",
    "Done. I'll also check {tool} on {host} tomorrow.",
]

# Queries an agent asks its memory (some have no answer in any generated store).
QUERY_TEMPLATES = [
    "when is {kid}'s {sport} practice",
    "what does {owner} drink in the morning",
    "how do we deploy the EvoClaw docs",
    "{partner} birthday present",
    "which host runs {tool}",
    "runbook for {service} restarts",
    "dentist appointment with {doctor}",
    "what is {owner} allergic to",
    "flight to {city} booking reference",
    "how much is the {bill} bill",
    "backup command for {host}",
    "decision about {service} and {lang}",
    "lesson about {topic} on staging",
    "{pet} vaccination vet",
    "who covers reviews while {colleague} is on leave",
    "garden bot {plant} {sensor} threshold",
    "hotel in {city}",
    "{course} homework",
    "where is the config for {tool}",
    "what did the {trade} fix",
    "{z:person}的生日",
    "{z:city}旅行",
    "喜欢的川菜",
    "体检",
    # questions nothing in the generated memories answers
    "what is the wifi password at the beach house in Tromsø",
    "quantum chromodynamics lecture notes",
]


@dataclass
class GenFact:
    """A generated fact; `age_days` turns into created_at against the benchmark's clock."""

    id: str
    text: str
    category: str
    importance: float
    age_days: float
    urls: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


class Generator:
    """Seeded generator of facts, queries and conversations."""

    def __init__(self, seed: int = 42):
        self.rng = random.Random(seed)
        self._counter = 0

    # -- slot filling --------------------------------------------------------------------

    def _fill(self, template: str, meta: Optional[dict[str, list[str]]] = None) -> str:
        out: list[str] = []
        i = 0
        while i < len(template):
            c = template[i]
            if c != "{":
                out.append(c)
                i += 1
                continue
            j = template.index("}", i)
            slot = template[i + 1:j]
            out.append(self._slot(slot, meta))
            i = j + 1
        return "".join(out)

    def _slot(self, slot: str, meta: Optional[dict[str, list[str]]]) -> str:
        r = self.rng
        if slot.startswith("z:"):
            return r.choice(VZ[slot[2:]])
        if slot == "n":
            return str(r.randint(2, 95))
        if slot == "d":
            return str(r.randint(1, 28))
        if slot == "m":
            return str(r.randint(1, 12))
        if slot == "y":
            return str(r.randint(2016, 2026))
        if slot == "q":
            return str(r.randint(1, 4))
        if slot == "t":
            return f"{r.randint(7, 20)}:{r.choice(('00', '15', '30', '45'))}"
        if slot == "v":
            return f"{r.randint(0, 3)}.{r.randint(0, 14)}.{r.randint(0, 9)}"
        if slot == "ref":
            return "".join(r.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
        if slot == "url":
            url = f"https://{r.choice(V['domain'])}/{r.choice(('runbooks', 'notes', 'blog', 'releases', 'docs', 'guides'))}/{r.randint(1, 999)}"
            if meta is not None:
                meta["urls"].append(url)
            return url
        if slot == "cmd":
            cmd = r.choice(V["cmd"])
            if meta is not None:
                meta["commands"].append(cmd)
            return cmd
        if slot == "fpath":
            p = r.choice(V["fpath"])
            if meta is not None:
                meta["paths"].append(p)
            return p
        return r.choice(V[slot])

    # -- facts ---------------------------------------------------------------------------

    def _age(self, max_age_days: float) -> float:
        """Ages denser towards the present (an agent stores more as it is used more)."""
        u = self.rng.random()
        return round(max_age_days * (u ** 1.3), 3)

    def _importance(self, centre: float) -> float:
        value = self.rng.gauss(centre, 0.12)
        return round(min(1.0, max(0.05, value)), 2)

    def fact(self, max_age_days: float = 3650.0, chinese_share: float = 0.12) -> GenFact:
        r = self.rng
        if r.random() < chinese_share:
            category, template, centre = r.choice(TEMPLATES_ZH)
            suffixes = SUFFIXES_ZH
        else:
            category, template, centre = r.choice(TEMPLATES)
            suffixes = SUFFIXES
        if r.random() < 0.75:
            template += r.choice(suffixes)
        meta: dict[str, list[str]] = {"urls": [], "commands": [], "paths": []}
        text = self._fill(template, meta)
        # Some links live only in the metadata (a page the owner shared, not quoted in text).
        if r.random() < 0.08:
            meta["urls"].append(f"https://{r.choice(V['domain'])}/shared/{r.randint(1000, 9999)}")
        self._counter += 1
        fid = f"{r.getrandbits(64):016x}"
        return GenFact(id=fid, text=text, category=category, importance=self._importance(centre),
                       age_days=self._age(max_age_days), urls=meta["urls"],
                       commands=meta["commands"], paths=meta["paths"])

    def facts(self, n: int, max_age_days: float = 3650.0) -> list[GenFact]:
        """n facts; like real notes, a few repeat an earlier one (remember reinforces those)."""
        return [self.fact(max_age_days) for _ in range(n)]

    def unique_facts(self, n: int, max_age_days: float = 3650.0,
                     seen: Optional[set] = None) -> list[GenFact]:
        """n facts that are all distinct for the library's duplicate check (normalized_key),
        so that n remember() calls store exactly n facts."""
        from evoclaw_memory.text import normalized_key
        seen = set() if seen is None else seen
        out: list[GenFact] = []
        while len(out) < n:
            f = self.fact(max_age_days)
            key = normalized_key(f.text)
            if key not in seen:
                seen.add(key)
                out.append(f)
        return out

    # -- queries and conversations ---------------------------------------------------------

    def queries(self, n: int) -> list[str]:
        return [self._fill(self.rng.choice(QUERY_TEMPLATES)) for _ in range(n)]

    def conversation(self) -> list[dict]:
        r = self.rng
        turns = r.randint(5, 10)
        messages = []
        for i in range(turns):
            if i % 2 == 0:
                messages.append({"role": "user", "content": self._fill(r.choice(CONVERSATION_TURNS_USER))})
            else:
                messages.append({"role": "assistant", "content": self._fill(r.choice(CONVERSATION_TURNS_AGENT))})
        return messages

    def hot_updates(self) -> list[tuple[str, dict]]:
        """A full hot state: identity, profile, 5 projects, 10 events, 10 tasks, 20 lessons."""
        r = self.rng
        ups: list[tuple[str, dict]] = [
            ("identity", {"agent_name": "Claw", "owner_name": "Ana Ferreira",
                          "owner_preferred_name": "Ana", "relationship_start": "2016-01-04",
                          "trust_level": 0.9}),
            ("owner_profile", {"personality": "direct, curious, dry humour",
                               "family": "partner Tomás, kids Lucía and Mateo, dog Pixel",
                               "topics_loved": ["homelab", "gardening", "Mandarin", "running"],
                               "topics_avoid": ["work gossip"],
                               "timezone": "Europe/Lisbon", "work_hours": "09:00-17:30"}),
        ]
        for name in ("EvoClaw", "Garden bot", "Homelab", "Website", "Mandarin HSK 3"):
            ups.append(("project", {"name": name, "status": "active",
                                    "description": self._fill("next: {topic} ({month})")}))
        for _ in range(10):
            ups.append(("event", {"text": self._fill(r.choice(CONVERSATION_TURNS_USER))[:140]}))
        for _ in range(10):
            ups.append(("task", {"text": self._fill("Ask {colleague} about {topic} before {weekday}")}))
        for _ in range(20):
            _, template, _c = r.choice([t for t in TEMPLATES if t[0].startswith("lessons")])
            ups.append(("lesson", {"text": self._fill(template)[:140], "category": "ops",
                                   "importance": round(r.uniform(0.7, 1.0), 2)}))
        return ups


def to_facts(gen: list[GenFact], now: float):
    """evoclaw_memory Fact objects (for Memory.bulk_insert), created `age_days` before now."""
    from evoclaw_memory.models import Fact, Metadata
    out = []
    for g in gen:
        created = now - g.age_days * DAY
        out.append(Fact(id=g.id, text=g.text, category=g.category, importance=g.importance,
                        created_at=created, last_access=created,
                        metadata=Metadata(urls=g.urls[:10], commands=g.commands[:5],
                                          paths=g.paths[:10]),
                        source="bench", tier="cold"))
    return out


def build_tree(mem) -> None:
    """Create the 42-node tree with its descriptions (parents first)."""
    for path, desc in TREE:
        mem.tree_add(path, desc)


def load_store(mem, n: int, seed: int = 42, max_age_days: float = 3650.0,
               chunk: int = 50_000, gen: Optional[list[GenFact]] = None) -> list[GenFact]:
    """Fill `mem` with n generated facts in bulk (tree first, then bulk_insert + recount).

    Big stores are loaded with Memory.bulk_insert (tier by score) rather than one remember()
    at a time; a quick consolidation then archives warm down to its 50 KB cap, as the
    running agent would have."""
    import time as _time
    if gen is None:
        gen = Generator(seed).facts(n, max_age_days)
    build_tree(mem)
    now = _time.time()
    for start in range(0, len(gen), chunk):
        mem.bulk_insert(to_facts(gen[start:start + chunk], now), tier_by_score=True)
    mem.recount_tree()
    mem.consolidate("quick")
    # The full-text index as an old agent's daily consolidation leaves it (one segment),
    # not as the bulk load left it (bench/README.md, old-agent stores).
    mem.store.merge_fulltext()
    return gen


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[k]


def iter_chunks(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]
