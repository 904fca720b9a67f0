#!/usr/bin/env bash
# The real workflow, through the CLI an agent calls once per turn. Run by scripts/demo.
set -euo pipefail
em() { echo; echo "\$ evoclaw-memory $*"; .venv/bin/evoclaw-memory "$@"; }

echo "== evoclaw-memory demo (EVOCLAW_HOME=$EVOCLAW_HOME, embedded default: no server, no API key)"
em hot --update identity '{"agent_name": "Claw", "owner_name": "Sam Carter", "owner_preferred_name": "Sam"}'
em hot --update owner_profile '{"timezone": "Europe/London", "work_hours": "9-17"}'
em hot --update lesson '{"text": "Never restart the home server during a backup", "category": "ops", "importance": 0.9}'
em hot --update task '{"text": "Book the MOT for the Golf before 14 December"}'

em store --text "Biscuit the beagle is allergic to chicken; feed salmon kibble" --category home/pets/biscuit --importance 0.8
em store --text "The garden bot firmware lives at https://github.com/samc/garden-bot; flash with \`pio run -t upload\`" --category projects/garden-bot --importance 0.7
em store --text "Sam's daughter Mia loves drawing and swimming" --category owner/family/kids --importance 0.7
em store --text "我的女儿喜欢画画和游泳" --category owner/family/kids --importance 0.6

CONVERSATION='[{"role": "user", "content": "Remember that my dentist moved: it is now Dr Okafor at Otley Road, appointment on 12 December."},
{"role": "assistant", "content": "Noted. Anything else?"},
{"role": "user", "content": "Yes, I decided to switch the home server backups to restic, docs at https://restic.readthedocs.io and run `restic backup ~/data` nightly."}]'
em distill --text "$CONVERSATION" --store

em retrieve "what is the dog allergic to"
em retrieve "女儿喜欢什么"
em retrieve "how do I flash the garden bot"
em search-url restic
em consolidate --mode quick
em tree
em hot
em context "dentist appointment"
em metrics

echo; echo "== sync: push everything to the archive (here the embedded default, \$EVOCLAW_HOME/cloud.db)"
em sync
em sync --status
echo; echo "== the device is lost: a new device restores the agent from that archive"
NEW_DEVICE="$EVOCLAW_HOME/../.demo-new-device"
rm -rf "$NEW_DEVICE"
echo "\$ TURSO_DATABASE_URL=\$EVOCLAW_HOME/cloud.db evoclaw-memory --home $NEW_DEVICE restore"
TURSO_DATABASE_URL="$EVOCLAW_HOME/cloud.db" .venv/bin/evoclaw-memory --home "$NEW_DEVICE" restore
echo "\$ evoclaw-memory --home $NEW_DEVICE retrieve 'what is the dog allergic to'"
TURSO_DATABASE_URL="$EVOCLAW_HOME/cloud.db" .venv/bin/evoclaw-memory --home "$NEW_DEVICE" retrieve "what is the dog allergic to"
echo
echo "== done. MEMORY.md was written to $EVOCLAW_HOME/agents/default/workspace/MEMORY.md"
