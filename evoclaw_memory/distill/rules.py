"""Rule-mode distillation (SPEC §4): conversations into a structured record and into facts.

No LLM, no I/O: keyword lists in English and Simplified Chinese, a few regexes, arithmetic.
The three stages:
  1. raw conversation            `conversation_text(messages)`
  2. structured record (~100 B)  `distill_structured(messages) -> Distilled`
  3. core summary (<= 30 B)      `core_summary(distilled)`
and the facts worth storing      `distill_facts(messages, known_categories)`.

Speed: all messages are joined and analysed together, not sentence by sentence. The text
is split into sentence spans; then each scanner (English keywords, Chinese keywords, names,
links) runs once over the whole text and drops what it finds into the sentence whose span
holds it, and the few per-sentence counts are single regex calls. Every step is linear:
a 1 MB conversation takes about 0.6-0.8 s of CPU for `distill_facts` and 0.4 s for
`distill_structured` on a small shared 2-core machine (a loop of regexes per sentence, and
one analysis per message, were both several times slower).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from typing import Any, Iterable, Iterator, NamedTuple, Sequence, Union

from evoclaw_memory.limits import CORE_SUMMARY_MAX_BYTES, DISTILLED_FACT_MAX_CHARS
from evoclaw_memory.distill.metadata import locate_metadata, merge_metadata, metadata_from_items, words_regex
from evoclaw_memory.models import Distilled, FactDraft, Metadata

Messages = Union[str, Sequence[Any]]

# Stage 2's `fact` aims at ~80-100 bytes (SPEC §4).
STRUCTURED_FACT_MAX_BYTES = 100
_OUTCOME_MAX_BYTES = 80
_MAX_PEOPLE = 5
_MAX_TOPICS = 3
_MAX_ACTIONS = 3
# Signal points (see `_info_score`) a sentence needs to become a fact.
CONVERSATION_MIN_SCORE = 2

# ---------------------------------------------------------------------------------------
# Lexicon. Each line: label, its English words, then after "|" its Chinese words. English
# words also match their plural and possessive ("dog" finds "dogs", "dog's"); Chinese words
# are substrings, matched longest first ("不开心" before "开心").
# ---------------------------------------------------------------------------------------

# Topics in priority order: when a new category must be invented, the first topic found in
# this order gives its path (see _TOPIC_PATHS).
_TOPICS = """
health: health doctor dentist gp hospital clinic nurse medicine medication pill prescription
    allergy allergic asthma sick ill illness flu fever pain headache injury surgery vaccine
    vaccination diet sleep therapy therapist diabetes symptom pharmacy intolerant | 健康 医生 医院 牙医
    看病 吃药 药物 过敏 生病 感冒 发烧 头疼 手术 体检 疫苗 睡眠 血压 糖尿病 症状 挂号
family: family wife husband partner spouse son daughter kid child children baby toddler mum mom
    mother dad father parent sister brother grandma grandpa grandmother grandfather aunt uncle
    cousin niece nephew in-law | 家人 老婆 妻子 老公 丈夫 爱人 儿子 女儿 孩子 宝宝 妈妈 爸爸 父母 母亲 父亲 姐姐 妹妹 哥哥 弟弟 奶奶 爷爷
    外婆 外公 姥姥 岳父 岳母 公公 婆婆
pets: pet dog puppy cat kitten vet beagle labrador rabbit hamster parrot kennel | 宠物 小狗 狗狗 养狗 遛狗
    小猫 猫咪 养猫 兽医 猫粮 狗粮
work: work job office boss manager colleague coworker team meeting deadline client customer
    salary promotion interview career oncall on-call standup sprint contract employer | 工作 上班 下班
    公司 老板 经理 同事 团队 会议 开会 截止 客户 工资 升职 面试 加班 出差
finance: money finance bank budget tax mortgage rent loan invest investment saving pension bill
    insurance payment invoice expense | 财务 银行 预算 交税 税务 房贷 房租 贷款 投资 存款 储蓄 养老金 账单 保险 付款 花费 报销
travel: travel trip flight airport hotel holiday vacation visa passport train abroad itinerary |
    旅行 旅游 机票 航班 飞机 机场 酒店 度假 签证 护照 火车 高铁 行程
tech: server code coding bug deploy deployment database docker kubernetes linux python git
    github api laptop computer software hardware network wifi router homelab backup ssh vps
    script config firmware | 服务器 代码 编程 部署 数据库 电脑 软件 硬件 网络 路由器 备份 脚本 配置 安装 程序
food: food eat eating dinner lunch breakfast cook cooking recipe restaurant meal cake coffee tea
    vegetarian vegan spicy curry | 吃饭 晚饭 午饭 早饭 早餐 晚餐 做饭 菜谱 餐厅 饭店 蛋糕 咖啡 喝茶 素食 火锅 好吃
home: home house flat apartment garden kitchen bedroom furniture plumber boiler landlord
    neighbour neighbor car | 房子 公寓 花园 厨房 卧室 家具 装修 维修 邻居 搬家 汽车 车库
learning: learn learning course class school university study exam lesson homework language
    mandarin | 学习 课程 上课 学校 大学 考试 作业 中文 英语 普通话 汉语
hobbies: hobby game gaming guitar piano music band book reading movie film football soccer
    tennis hiking climbing bouldering photography painting drawing chess knitting cycling | 爱好
    游戏 吉他 钢琴 音乐 看书 读书 电影 电视剧 足球 网球 爬山 徒步 摄影 画画 下棋 骑行
social: friend party birthday wedding anniversary christmas | 朋友 聚会 生日 婚礼 纪念日 派对 过年 春节
"""

# Where a fact goes when no existing category fits, by topic.
_TOPIC_PATHS = {
    "health": "health",
    "family": "owner/family",
    "pets": "home/pets",
    "work": "work",
    "finance": "owner/finance",
    "travel": "travel",
    "tech": "technical",
    "food": "food",
    "home": "home",
    "learning": "learning",
    "hobbies": "hobbies",
    "social": "social",
}

# Extra words a category segment is compared with: a fact about a "wife" matches the
# segment `partner`, one about a "dentist" matches `medical`. Labels are stemmed segments.
_SEGMENT_TERMS = """
partner: wife husband spouse girlfriend boyfriend | 老婆 妻子 老公 丈夫 爱人 女朋友 男朋友
kid: son daughter child children kid baby toddler | 儿子 女儿 孩子 宝宝
parent: mum mom mother dad father parent | 妈妈 爸爸 父母 母亲 父亲
in-law: mother-in-law father-in-law in-law | 岳父 岳母 公公 婆婆
pet: dog puppy cat kitten vet | 宠物 小狗 狗狗 小猫 猫咪
medical: doctor dentist gp hospital clinic medicine medication prescription vaccine surgery | 医生
    医院 牙医 看病 吃药 手术 疫苗
allergy: allergic allergy intolerant | 过敏
fitness: gym workout exercise running fitness | 锻炼 健身 跑步
recipe: recipe bake baking | 菜谱 做法
trip: trip flight hotel holiday vacation | 旅行 旅游 机票 酒店
document: passport visa | 护照 签证
friend: friend | 朋友
event: party birthday wedding anniversary | 聚会 生日 婚礼 派对
preference: like love prefer favourite favorite hate dislike enjoy | 喜欢 讨厌 最爱 偏好
profile: name age born | 名字 出生
career: cv resume promotion interview recruiter | 简历 升职 面试
team: colleague coworker teammate | 同事
debugging: bug debug debugging | 调试
network: wifi router dns vpn | 路由器 网络
"""

_EMOTIONS = """
happy: happy glad excited thrilled delighted cheerful joyful | 开心 高兴 快乐 兴奋 幸福 太好了
sad: sad upset unhappy depressed heartbroken lonely crying | 难过 伤心 失望 孤独 不开心 不高兴
anxious: worried anxious nervous stressed scared afraid | 担心 焦虑 紧张 害怕 压力大
angry: angry annoyed frustrated furious irritated | 生气 恼火 烦死 气死
tired: tired exhausted sleepy drained | 很累 好累 疲惫 累死
grateful: grateful thankful appreciate | 感谢 感激
proud: proud | 骄傲 自豪
relieved: relieved | 松了口气 放心了
"""

# The label is the base form reported in `Distilled.actions`.
_ACTIONS = """
buy: buy bought | 购买 买了
book: book booked | 预订 订了
move: move moved | 搬家
start: start started | 开始
finish: finish finished completed | 完成
call: call called phoned | 打电话
visit: visit visited | 拜访
install: install installed | 安装
deploy: deploy deployed | 部署
fix: fix fixed repaired | 修好 修理
order: order ordered | 下单
pay: pay paid | 付了 付款
sign: sign signed | 签了 签约
learn: learn learned learnt | 学会
cook: cook cooked baked | 做饭
meet: meet met | 见面
schedule: schedule scheduled | 预约
cancel: cancel cancelled canceled | 取消
send: send sent | 发送
write: write wrote written | 写了
adopt: adopt adopted | 领养
sell: sell sold | 卖了
rent: rent rented | 租了
hire: hire hired | 招聘
quit: quit resigned | 辞职
join: join joined | 加入
apply: apply applied | 申请
upgrade: upgrade upgraded | 升级
migrate: migrate migrated | 迁移
configure: configure configured | 配置 搭建
replace: replace replaced | 更换
travel: travel travelled traveled flew | 旅行
test: test tested | 测试
release: release released launched | 发布
renew: renew renewed | 续签
register: register registered | 注册
submit: submit submitted filed | 提交
"""

# Sentence-level signals ("flags"). English single words, English word pairs, Chinese words.
_FLAG_WORDS = """
remember: remember important importantly always never must critical | 记住 记得 别忘 不要忘 重要 一定要 务必 永远
    总是 从不 千万 必须
credential: password passphrase passcode pin token secret credential 2fa otp | 密码 密钥 口令 账号 验证码
    私钥
personal: i me my mine we us our i'm i've i'd i'll we're we've we'll | 我
preference: favourite favorite prefer prefers preferred preference allergic vegetarian vegan |
    喜欢 爱吃 爱喝 讨厌 最爱 偏好 受不了 过敏 不吃 不喝 习惯
firm_decision: decided agreed chose chosen | 决定 同意 选了 定了
plan: will gonna booked scheduled i'll we'll | 打算 计划 准备 约好 安排
result: finally fixed solved resolved | 结果 最后 终于 搞定 解决了
date: january february march april june july august september october november december jan feb
    apr jun jul aug sept oct nov dec monday tuesday wednesday thursday friday saturday sunday
    today tomorrow tonight yesterday weekend | 今天 明天 后天 昨天 前天 上周 下周 这周 本周 上个月 下个月 这个月 今年 明年 去年
    周末 早上 晚上 上午 下午 中午
profile: | 我叫 我住在 我来自 我是
"""
_FLAG_PAIRS = {
    ("don't", "forget"): "remember",
    ("not", "forget"): "remember",
    ("never", "forget"): "remember",
    ("note", "that"): "remember",
    ("in", "mind"): "remember",
    ("decide", "to"): "firm_decision",
    ("settled", "on"): "firm_decision",
    ("going", "with"): "firm_decision",
    ("going", "to"): "plan",
    ("plan", "to"): "plan",
    ("plans", "to"): "plan",
    ("planning", "to"): "plan",
    ("api", "key"): "credential",
    ("ssh", "key"): "credential",
    ("private", "key"): "credential",
    ("recovery", "key"): "credential",
    ("would", "rather"): "preference",
    ("can't", "stand"): "preference",
    ("cannot", "stand"): "preference",
    ("next", "week"): "date",
    ("next", "month"): "date",
    ("next", "year"): "date",
    ("ended", "up"): "result",
    ("turned", "out"): "result",
    ("my", "name"): "profile",
    ("i", "live"): "profile",
    ("i'm", "from"): "profile",
    ("am", "from"): "profile",
    ("was", "born"): "profile",
    ("call", "me"): "profile",
}
# "like", "love"... state a preference after a subject: "I love", "Sam hates", "we don't like".
_PREFERENCE_VERBS = frozenset(
    "like likes love loves hate hates dislike dislikes enjoy enjoys adore adores".split()
)
_PREFERENCE_SUBJECTS = frozenset(
    "i we he she they really also absolutely don't doesn't not do does always never".split()
)
# Flags implied by others.
_IMPLIED_FLAGS = {"firm_decision": "decision", "plan": "decision", "profile": "personal"}

_ZH_FILLER_WORDS = "你好 您好 谢谢 多谢 好的 好吧 嗯 嗯嗯 哦 啊 哈哈 哈哈哈 没问题 再见 拜拜 收到 是的 对的 早上好 晚安 不客气 明白 了解 可以 对 行 了 吧 呢 呀"
_ZH_DAY_WORDS = [p + d for p in ("周", "星期", "礼拜") for d in "一二三四五六日天"] + [
    m + "月" for m in "一 二 三 四 五 六 七 八 九 十 十一 十二".split()
]


def _parse_table(table: str) -> list[tuple[str, list[str], list[str]]]:
    """(label, English words, Chinese words) per entry; indented lines continue an entry."""
    lines: list[str] = []
    for line in table.strip("\n").splitlines():
        if line.startswith(" ") and lines:
            lines[-1] += " " + line.strip()
        elif line.strip():
            lines.append(line)
    entries = []
    for line in lines:
        label, _, words = line.partition(":")
        english, _, chinese = words.partition("|")
        entries.append((label.strip(), english.split(), chinese.split()))
    return entries


def _stem(word: str) -> str:
    """A crude English stem: enough to make "pets", "allergies", "Maya's" meet "pet" etc."""
    if word.endswith(("'s", "’s")):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _variants(word: str) -> set[str]:
    """Surface forms of a listed English word: "dog" -> dog, dogs, doges; "story" -> stories."""
    forms = {word, word + "s", word + "es"}
    if word.endswith("y"):
        forms.add(word[:-1] + "ies")
    return forms


def _build_lexicon() -> tuple[dict, dict]:
    """(English surface form -> entries, Chinese word -> entries); an entry is (kind, label)."""
    english: dict[str, list[tuple[str, str]]] = {}
    chinese: dict[str, list[tuple[str, str]]] = {}
    for kind, table in (
        ("topic", _TOPICS),
        ("term", _SEGMENT_TERMS),
        ("emotion", _EMOTIONS),
        ("action", _ACTIONS),
    ):
        for label, english_words, chinese_words in _parse_table(table):
            entries = [(kind, label)]
            if kind == "topic":  # a topic is also a term: "pets" meets the segment `pets`
                entries.append(("term", _stem(label)))
            for word in english_words:
                for form in _variants(word):
                    english.setdefault(form, []).extend(entries)
            for word in chinese_words:
                chinese.setdefault(word, []).extend(entries)
    for flag, english_words, chinese_words in _parse_table(_FLAG_WORDS):
        for word in english_words:
            english.setdefault(word, []).append(("flag", flag))
        for word in chinese_words:
            chinese.setdefault(word, []).append(("flag", flag))
    for (first, second), flag in _FLAG_PAIRS.items():
        english.setdefault(f"{first} {second}", []).append(("flag", flag))
    for verb in _PREFERENCE_VERBS:
        english.setdefault(verb, []).append(("preference_verb", ""))
    for word in _ZH_DAY_WORDS:
        chinese.setdefault(word, []).append(("flag", "date"))
    for word in _ZH_FILLER_WORDS.split():
        chinese.setdefault(word, []).append(("filler", ""))
    # A longer word hides the shorter ones inside it (我叫 hides 我): give it their meaning too.
    chinese["我叫"].append(("flag", "personal"))
    return english, chinese


def _keyword_regex(words: Iterable[str]) -> re.Pattern[str]:
    """Lowercase keywords (and their "'s") as one prefix-tree regex, to run on lowered text.

    It starts with a literal so the engine can skip ahead; that a match starts a word is
    checked in code (`_starts_word`), which is much faster than a leading look-behind.
    """
    return re.compile(rf"(?:{words_regex(words)})(?:'s)?(?![a-z0-9'-])")


# Built once at import: constant tables, never modified (not state).
_ENGLISH, _CHINESE = _build_lexicon()
_ENGLISH_RE = _keyword_regex(_ENGLISH)
_CHINESE_RE = re.compile(words_regex(_CHINESE))
_TOPIC_ORDER = [label for label, _, _ in _parse_table(_TOPICS)]

# Words too common to say anything about a category or to count as content.
_STOPWORDS = frozenset("""
    a an the and or but if then so to of in on at by for with from into onto over under about
    as is are was were be been being am do does did done have has had having i me my mine we
    us our you your he him his she her it its they them their this that these those there here
    what which who whom whose when where why how not no yes all any some each every more most
    very really just also too only still even again ever can could will would shall should may
    might must need let get got go going went make made take took say said tell told know think
    thought want like one two new good great well ok okay sure thanks thank please hi hello hey
    yeah yep nope lol haha oh ah um uh hmm right alright cool nice fine bye goodbye morning
    night evening afternoon welcome awesome perfect wow indeed exactly true lot much many thing
    things something anything nothing today now then don't i'm it's that's i've i'd i'll we're
    we've we'll you're can't won't didn't doesn't isn't
    """.split())
# Capitalised words that are not names even in mid-sentence.
_NOT_NAMES = frozenset("""
    I I'm I've I'd I'll Mr Mrs Ms Dr Prof Sir Madam Monday Tuesday Wednesday Thursday Friday
    Saturday Sunday January February March April May June July August September October November
    December Christmas Easter English Chinese Mandarin Cantonese British American French German
    Spanish Italian Japanese Korean Indian European Internet Todo Note Yes No Hi Hello Hey Thanks
    Thank Please Sorry Also But And Or So Then The A An This That It We You He She They My Our
    Your His Her Their Its Today Tomorrow Yesterday Tonight Next Last Remember Important Never
    Always User Assistant System What Who Where When Why How Which There Here Let Everyone
    Everything Nobody Nothing Someone Something Anyone Anything Mum Mom Dad
    """.split())
# A capitalised word after these is a place or a thing ("in Leeds", "the Hilton").
_PLACE_WORDS = frozenset("in at from to near into via the a an visit visited visiting on onto".split())
_WH_WORDS = frozenset("what why how when where who which whose".split())

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:['’-][A-Za-z0-9]+)*")
# Words of two letters or more that are not stopwords, on lowered text.
_CONTENT_WORD_RE = re.compile(
    rf"(?<![a-z0-9'-])(?!(?:{words_regex(_STOPWORDS)})(?![a-z0-9'-]))[a-z][a-z0-9]+(?:['-][a-z0-9]+)*"
)
# A run of capitalised words: "Maya", "Chen Li", "Maya's"; checked further in `_scan_names`.
_NAME_RE = re.compile(r"[A-Z][a-z]+(?:['’-][A-Za-z]?[a-z]+)*(?: [A-Z][a-z]+(?:['’-][A-Za-z]?[a-z]+)*)*")
_PREVIOUS_WORD_RE = re.compile(r"([A-Za-z'’]+)[^A-Za-z'’]*$")
_NEGATED_RE = re.compile(r"(?:\bnot|\bnever|n't|\bno)\s+$")
# Acronyms (AWS, ENT), codes with digits (ESP32, HSK4, v0.3), CamelCase (GitHub, iPhone).
_ENTITY_RE = re.compile(
    r"(?<![A-Za-z0-9])(?:(?!(?:OK|TODO|FYI|BTW|AM|PM|ASAP)(?![A-Za-z0-9]))[A-Z]{2,}[A-Za-z0-9]*"
    r"|[A-Za-z]+\d[A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z]*|[A-Z][a-z]+[A-Z][A-Za-z]*)"
)
_CJK_CHAR_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_DIGIT_RE = re.compile(r"\d")
_ALNUM_RE = re.compile(r"[^\W_]")
# Starts with a digit (no look-behind, no IGNORECASE) so the engine jumps between digits.
_NUMERIC_DATE_RE = re.compile(
    r"\d{1,4}(?:-\d{2}-\d{2}|(?:st|nd|rd|th)\b|:\d{2}|\s?[aApP][mM]\b|\s+[mM]ay\b|\s*[年月日号])"
)
# Starts with a literal so the engine can jump between candidates; checked further in code.
_EMAIL_RE = re.compile(r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_PHONE_RE = re.compile(r"\+?\d[\d -]{8,}\d")

# Common Chinese surnames for the name heuristic.
_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕"
    "丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)
_CJK = r"\u4e00-\u9fff"
_ZH_NAME_RE = re.compile(
    # 名叫 / 叫做 / 名字叫: whatever follows is the name
    rf"(?:名叫|叫做|名字叫)(?P<called>[{_CJK}]{{2,3}})"
    # after a companion or kinship word, a surname starts a name: 和陈莉, 跟老王, 表姐王静;
    # after a bare 叫 ("call", "order") too: 我叫陈莉 yes, 叫外卖 no
    r"|(?:叫|和|跟|同|与|给|陪|找|问|带|约|、|表姐|表哥|表妹|表弟|姐姐|哥哥|妹妹|弟弟|朋友|同事|老板|邻居|岳父|岳母|公公|婆婆)"
    rf"(?P<after_word>(?:老|小)?[{_SURNAMES}][{_CJK}]{{1,2}})"
    # at the start of a clause, a surname and one or two characters before 的/说/是...: 陈莉每周...
    # (each starts with the surname and checks the character before it afterwards, which
    # lets the engine jump from surname to surname)
    rf"|(?P<subject>[{_SURNAMES}](?<![{_CJK}].)[{_CJK}]{{1,2}}?)"
    r"(?=的|说|是|在|和|跟|每|也|都|要|会|觉得|喜欢|开车|住|去|来|只|，|、)"
    # 王医生 / 李老师: a surname and a title
    rf"|(?P<titled>[{_SURNAMES}](?<![{_CJK}].)(?:先生|女士|老师|医生|大夫|经理|阿姨|叔叔|教授|律师))"
)
# Characters that end a Chinese given name: particles, common verbs, pronouns.
_NAME_STOP_CHARS = frozenset(
    "的了是在和跟说去来把被给也都就要会很不没有我你他她它们这那个上下里吧吗呢啊过着到对与及还又再才从向让请叫同带见"
    "决打想吃买看做听写已刚一起经回走约聊住每觉"
)
# Words that look like surname + name but are not people.
_ZH_NOT_NAMES = frozenset(
    "高兴 周末 方便 马上 安全 白天 黄金 金额 林业 时间 方法 向前 万一 钱包 石头 江边 龙头 史上 江湖 周围 周年 万元 方面 高铁 马路".split()
)

# Outcome phrases, strongest first: a firm decision beats a plan, a plan beats a result.
_OUTCOME_PATTERNS = (
    (
        "firm_decision",
        re.compile(
            r"\b(?:decided|decide to|agreed|chose|chosen|settled on|going with)\b|决定|同意|选了|定了", re.I
        ),
    ),
    (
        "plan",
        re.compile(
            r"\b(?:will|going to|gonna|plan(?:ning|s)? to|booked|scheduled)\b|'ll\b|打算|计划|准备|约好|安排",
            re.I,
        ),
    ),
    (
        "result",
        re.compile(
            r"\b(?:ended up|turned out|finally|fixed|solved|resolved)\b|结果|最后|终于|搞定|解决了", re.I
        ),
    ),
)
_CLAUSE_END_RE = re.compile(r"[,.;!?。！？；，\n]")

# Sentence ends: . ! ? before a space (not in "3.11" or a URL), 。！？ anywhere, line breaks.
_SENTENCE_END_RE = re.compile(r"[.!?]+(?=\s|$)|[。！？]+|\n")
_ABBREVIATION_RE = re.compile(
    r"(?<![A-Za-z.])(?:(?i:e\.g|i\.e|etc|vs|mr|mrs|ms|dr|prof|st|approx|fig|cf|jr|sr)|[A-Z])\Z"
)
_BULLET_RE = re.compile(r"\s*(?:[-*+•>]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_LEADING_FILLER_RE = re.compile(
    r"^(?:(?:so|well|oh|ok|okay|um|uh|also|btw|by the way|anyway|hey|hi|hello|and|but|actually"
    r"|basically)\b[,:]?\s+)+"
    r"|^(?:嗯|哦|对了|那个|然后|另外)[，,]?\s*",
    re.IGNORECASE,
)


# ---------------------------------------------------------------------------------------
# Stage 1: messages
# ---------------------------------------------------------------------------------------


def conversation_text(messages: Messages) -> str:
    """The conversation as plain text, one "role: content" line per message."""
    if isinstance(messages, str):
        return messages
    return "\n".join(f"{role}: {content}" for role, content in _iter_messages(messages))


def _iter_messages(messages: Messages) -> Iterator[tuple[str, str]]:
    """(role, text) of each message; accepts OpenAI-style dicts, content parts or strings."""
    if isinstance(messages, str):
        if messages.strip():
            yield "user", messages
        return
    for message in messages or ():
        if isinstance(message, str):
            if message.strip():
                yield "user", message
            continue
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, list):  # [{"type": "text", "text": ...}, {"type": "image_url"...}]
            content = "\n".join(
                str(part.get("text", ""))
                for part in content
                if isinstance(part, dict) and part.get("type") == "text"
            )
        if isinstance(content, str) and content.strip():
            yield str(message.get("role") or "user"), content


# ---------------------------------------------------------------------------------------
# Sentences and their signals
# ---------------------------------------------------------------------------------------


def split_sentences(text: str) -> list[str]:
    """Split English and Chinese text into trimmed sentences (lines, . ! ? 。！？)."""
    return [text[start:end] for start, end in _sentence_spans(text)]


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END_RE.finditer(text):
        if match.group().startswith(".") and _ends_with_abbreviation(text, match.start()):
            continue
        _add_span(spans, text, start, match.end())
        start = match.end()
    _add_span(spans, text, start, len(text))
    return spans


def _ends_with_abbreviation(text: str, dot: int) -> bool:
    # "e.g." and "Mr." do not end a sentence; neither does an initial such as "J."
    return _ABBREVIATION_RE.search(text, max(0, dot - 8), dot) is not None


def _add_span(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    bullet = _BULLET_RE.match(text, start, end)
    if bullet:
        start = bullet.end()
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    # Keep only spans with a letter or digit: "---" or "!!" are not sentences.
    if end > start and _ALNUM_RE.search(text, start, end):
        spans.append((start, end))


class _Sentence:
    """One sentence of a block and the signals the scanners dropped into it."""

    __slots__ = (
        "start",
        "end",
        "text",
        "flags",
        "terms",
        "topics",
        "emotions",
        "actions",
        "names",
        "content_words",
        "cjk_chars",
        "filler_chars",
        "first_word",
        "first_word_start",
        "items",
        "_score",
    )

    def __init__(self, text: str, start: int, end: int) -> None:
        self.start, self.end, self.text = start, end, text[start:end]
        self.flags: set[str] = set()
        self.terms: set[str] = set()  # topics and segment terms implied by the words
        self.topics: list[str] = []
        self.emotions: list[str] = []
        self.actions: list[str] = []
        self.names: list[str] = []
        self.content_words = 0
        self.cjk_chars = 0
        self.filler_chars = 0
        self.first_word = ""
        self.first_word_start = -1
        self.items: list[tuple[int, str, str]] = []  # located links, commands, paths
        self._score: int | None = None

    @property
    def metadata(self) -> Metadata:
        return metadata_from_items(self.items) if self.items else Metadata()

    @property
    def question(self) -> bool:
        return self.text.endswith(("?", "？", "吗", "呢")) or self.first_word in _WH_WORDS

    @property
    def filler(self) -> bool:
        """Greetings and thanks: no link, no content word, (almost) no Chinese beyond filler."""
        return not self.items and self.content_words == 0 and self.cjk_chars - self.filler_chars < 2

    @property
    def substantive(self) -> bool:
        return bool(self.items) or self.content_words >= 2 or self.cjk_chars >= 4

    @property
    def detailed(self) -> bool:
        return self.content_words >= 6 or self.cjk_chars >= 12

    @property
    def score(self) -> int:
        """Signal points, computed once the scanners are done (see `_info_score`)."""
        if self._score is None:
            self._score = _info_score(self)
        return self._score


class _Analysis(NamedTuple):
    sentences: list[_Sentence]
    stray_items: list[tuple[int, str, str]]  # links, commands, paths outside every sentence


def _analyse(text: str, spans: list[tuple[int, int]] | None = None) -> _Analysis:
    """The sentences of `text` (or of the given spans) with every signal counted."""
    sentences = [
        _Sentence(text, start, end) for start, end in (_sentence_spans(text) if spans is None else spans)
    ]
    if not sentences:
        return _Analysis([], locate_metadata(text))
    starts = [s.start for s in sentences]

    def sentence_at(offset: int) -> _Sentence | None:
        index = bisect_right(starts, offset) - 1
        if index >= 0 and offset < sentences[index].end:
            return sentences[index]
        return None

    # Lowercase once; "’" becomes "'" so "don’t" meets "don't". (Rare characters change
    # length when lowered; then offsets would drift, so keyword scanning uses a fallback.)
    lowered = text.lower().replace("’", "'")
    if len(lowered) != len(text):
        lowered = "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text).replace("’", "'")
    has_cjk = bool(_CJK_CHAR_RE.search(text))
    for sentence in sentences:
        _scan_sentence(text, lowered, sentence, has_cjk)
    _scan_keywords(lowered, sentence_at)
    _scan_names(text, sentence_at)
    if has_cjk:
        _scan_chinese(text, sentence_at)
    if "@" in text:
        _scan_emails(text, sentence_at)
    stray_items = []
    for item in locate_metadata(text):
        sentence = sentence_at(item[0])
        if sentence:
            sentence.items.append(item)
        else:
            stray_items.append(item)
    for sentence in sentences:
        for flag, implied in _IMPLIED_FLAGS.items():
            if flag in sentence.flags:
                sentence.flags.add(implied)
    return _Analysis(sentences, stray_items)


def _scan_sentence(text: str, lowered: str, sentence: _Sentence, has_cjk: bool) -> None:
    """The per-sentence counts, each one C-level regex call over the sentence."""
    start, end = sentence.start, sentence.end
    first = _WORD_RE.search(text, start, end)
    if first:
        sentence.first_word, sentence.first_word_start = lowered[first.start() : first.end()], first.start()
        sentence.content_words = len(_CONTENT_WORD_RE.findall(lowered, start, end))
        if _ENTITY_RE.search(text, start, end):
            sentence.flags.add("entity")
    if _DIGIT_RE.search(text, start, end):
        sentence.flags.add("number")
        if _NUMERIC_DATE_RE.search(text, start, end):
            sentence.flags.add("date")
        if _PHONE_RE.search(text, start, end):
            sentence.flags.add("contact")
    if has_cjk:
        sentence.cjk_chars = len(_CJK_CHAR_RE.findall(text, start, end))


def _starts_word(text: str, offset: int) -> bool:
    return offset == 0 or not (text[offset - 1].isalnum() or text[offset - 1] in "'’-_")


def _scan_keywords(lowered: str, sentence_at) -> None:
    """English lexicon words and flag words/pairs, one regex pass over the lowered text."""
    for match in _ENGLISH_RE.finditer(lowered):
        start = match.start()
        if not _starts_word(lowered, start):
            continue
        sentence = sentence_at(start)
        if sentence is None:
            continue
        word = match.group()
        entries = _ENGLISH.get(word) or _ENGLISH.get(word[:-2], ())  # "biscuit's" -> "biscuit"
        for kind, label in entries:
            if kind == "preference_verb":
                # "like" states a preference after a subject: "I like", "Sam hates", "we don't love".
                previous = _PREVIOUS_WORD_RE.search(lowered, max(sentence.start, start - 24), start)
                if previous and previous.group(1) in _PREFERENCE_SUBJECTS:
                    sentence.flags.add("preference")
            elif kind == "emotion" and _NEGATED_RE.search(lowered, max(sentence.start, start - 12), start):
                continue  # "not happy" is not happy
            else:
                _count_entry(sentence, kind, label)


def _count_entry(sentence: _Sentence, kind: str, label: str) -> None:
    if kind == "term":
        sentence.terms.add(label)
    elif kind == "flag":
        sentence.flags.add(label)
    elif kind == "topic":
        if label not in sentence.topics:
            sentence.topics.append(label)
    elif kind == "emotion":
        sentence.emotions.append(label)
    elif kind == "action":
        if label not in sentence.actions:
            sentence.actions.append(label)
    elif kind == "filler":
        pass  # counted by the caller, which knows the length


def _scan_names(text: str, sentence_at) -> None:
    """Runs of capitalised words that read as names (not a first word, not after "in"/"the")."""
    for match in _NAME_RE.finditer(text):
        start, end = match.span()
        if not _starts_word(text, start) or (end < len(text) and (text[end].isalnum() or text[end] in "_")):
            continue  # inside a word, a path or CamelCase ("GitHub")
        if start > 0 and text[start - 1] in "./@":
            continue
        sentence = sentence_at(start)
        if sentence is None:
            continue
        if (
            start == sentence.first_word_start
            and " " not in match.group()
            and not match.group().endswith(("'s", "’s"))
        ):
            continue  # the common case, decided cheaply: a lone capitalised first word (see _record_name)
        _record_name(text, sentence, match)
        # A capitalised word just before a preference verb is its subject: "Sam hates ...".
        if text.startswith(" ", end) and text[end + 1 : end + 9].split(" ", 1)[0] in _PREFERENCE_VERBS:
            sentence.flags.add("preference")


def _record_name(text: str, sentence: _Sentence, match: re.Match[str]) -> None:
    """Record a run of capitalised words as a name unless it reads as a place or a first word."""
    run = match.group().split(" ")
    possessive = run[-1].endswith(("'s", "’s"))
    if possessive:
        run[-1] = run[-1][:-2]
    kept = [w for w in run if w not in _NOT_NAMES and len(w) > 1]
    if not kept:
        return
    if kept[0] == run[0]:
        if len(kept) == 1 and not possessive and match.start() == sentence.first_word_start:
            return  # "Dinner was late", "Biscuit had his jab": a word or a name? Skip.
        previous = _PREVIOUS_WORD_RE.search(text, max(sentence.start, match.start() - 24), match.start())
        if previous and previous.group(1).lower() in _PLACE_WORDS:
            return  # "in Leeds", "the Hilton"
    name = " ".join(kept)
    if name not in sentence.names:
        sentence.names.append(name)
    sentence.flags.add("entity")


def _scan_chinese(text: str, sentence_at) -> None:
    for match in _CHINESE_RE.finditer(text):
        sentence = sentence_at(match.start())
        if sentence is None:
            continue
        for kind, label in _CHINESE[match.group()]:
            if kind == "filler":
                sentence.filler_chars += len(match.group())
            else:
                _count_entry(sentence, kind, label)
    for match in _ZH_NAME_RE.finditer(text):
        sentence = sentence_at(match.start())
        name = _trim_chinese_name(next(group for group in match.groups() if group))
        if sentence and name and name not in _ZH_NOT_NAMES and name not in sentence.names:
            sentence.names.append(name)
            sentence.flags.add("entity")


def _scan_emails(text: str, sentence_at) -> None:
    for match in _EMAIL_RE.finditer(text):
        at = match.start()
        # The regex starts at "@"; an address needs its user part right before it.
        if at > 0 and (text[at - 1].isalnum() or text[at - 1] in "._+-"):
            sentence = sentence_at(at)
            if sentence:
                sentence.flags.add("contact")


def _trim_chinese_name(name: str) -> str:
    # Cut the name at the first particle or verb: 陈莉去了 -> 陈莉.
    for index, ch in enumerate(name):
        if index > 0 and ch in _NAME_STOP_CHARS:
            name = name[:index]
            break
    core = name[1:] if name[0] in "老小" else name
    return name if len(core) >= 2 or (name[0] in "老小" and len(name) == 2) else ""


def find_people(text: str) -> list[str]:
    """Proper names in `text`: capitalised words in mid-sentence, Chinese names by surname."""
    people: list[str] = []
    for sentence in _analyse(text).sentences:
        _extend_unique(people, sentence.names)
    return people


def _info_score(sentence: _Sentence) -> int:
    """How much a sentence says: links, 'remember', preferences, decisions, names, dates..."""
    flags = sentence.flags
    score = 3 if sentence.items else 0
    for flag in ("remember", "preference", "decision", "credential", "contact"):
        score += 2 if flag in flags else 0
    for flag in ("entity", "date", "number", "personal"):
        score += 1 if flag in flags else 0
    score += 1 if sentence.topics else 0
    score += 1 if sentence.detailed else 0
    return score


def _is_informative(sentence: _Sentence, min_score: int) -> bool:
    if sentence.filler or not sentence.substantive:
        return False
    score = sentence.score
    if sentence.question:
        # A question is worth keeping only for what it carries: "can you save https://..." or
        # "remind me that Maya's dentist is on 8 December?"; "what's the weather?" is not.
        carries = sentence.names or {"date", "number"} & sentence.flags
        return bool(sentence.items) or (bool(carries) and score >= min_score + 1)
    return score >= min_score


def _importance(sentence: _Sentence, from_assistant: bool = False) -> float:
    """0..1: explicit 'remember'/'always', health, family and credentials weigh most."""
    flags = sentence.flags
    value = 0.4
    value += 0.3 if "remember" in flags else 0.0
    value += 0.2 if {"credential", "contact"} & flags else 0.0
    value += 0.15 if "health" in sentence.topics else 0.0
    value += 0.1 if "family" in sentence.topics else 0.0
    value += 0.1 if "preference" in flags else 0.0
    value += 0.1 if "decision" in flags else 0.0
    value += 0.05 if sentence.items else 0.0
    value += 0.05 if "date" in flags else 0.0
    value += 0.05 if sentence.names else 0.0
    value -= 0.1 if sentence.score <= CONVERSATION_MIN_SCORE else 0.0  # chit-chat
    value -= 0.1 if from_assistant else 0.0
    return round(min(1.0, max(0.05, value)), 2)


# ---------------------------------------------------------------------------------------
# Text shaping
# ---------------------------------------------------------------------------------------


def clean_sentence(sentence: str) -> str:
    """A sentence without bullets, leading filler ("so", "btw", "嗯") and extra spaces."""
    bullet = _BULLET_RE.match(sentence)
    text = " ".join((sentence[bullet.end() :] if bullet else sentence).split())
    stripped = _LEADING_FILLER_RE.sub("", text)
    if stripped and stripped != text and stripped[0].islower():
        stripped = stripped[0].upper() + stripped[1:]
    return stripped or text


def shorten(text: str, limit: int = DISTILLED_FACT_MAX_CHARS) -> str:
    """`text` cut to at most `limit` characters, at a clause or word boundary when possible."""
    if len(text) <= limit:
        return text
    room = limit - 1  # for the ellipsis
    head = text[:room]
    # Prefer ending at a clause break if that keeps most of the text...
    clause = max(head.rfind(mark) for mark in (", ", "; ", ": ", " - ", "，", "；", "：", "、"))
    if clause >= room * 0.6:
        return head[:clause].rstrip(" ,;:-，；：、") + "…"
    # ...else at a word boundary (English), else anywhere (Chinese has no spaces).
    space = head.rfind(" ")
    if space >= room * 0.6:
        head = head[:space]
    return head.rstrip(" ,;:-，；：、") + "…"


def truncate_utf8(text: str, max_bytes: int) -> str:
    """`text` cut to at most `max_bytes` UTF-8 bytes, never inside a character."""
    # "replace": a lone surrogate (invalid in UTF-8) becomes "?" instead of raising.
    encoded = text.encode("utf-8", errors="replace")
    return encoded[:max_bytes].decode("utf-8", errors="ignore")


def _byte_length(text: str) -> int:
    return len(text.encode("utf-8", errors="replace"))


def _shorten_bytes(text: str, max_bytes: int) -> str:
    """Cut to `max_bytes`, at a word boundary when there is one in the second half."""
    cut = truncate_utf8(text, max_bytes)
    if cut == text:
        return text
    space = cut.rfind(" ")
    if space >= len(cut) // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-，；：、")


# ---------------------------------------------------------------------------------------
# Categories
# ---------------------------------------------------------------------------------------

_SEGMENT_RE = re.compile(r"[^a-z0-9_-]+")
_PROJECT_RE = re.compile(
    r"\bproject\s+(?:called\s+|named\s+)?[\"“']?(?P<after>[A-Za-z0-9][\w-]{1,30})"
    r"|\b(?P<before>[A-Z][\w-]{1,30})\s+project\b"
)


class _CategoryIndex:
    """Known category paths indexed by the word forms of their segments.

    Built once per call, so that matching a sentence is one regex call and a few look-ups,
    not a loop over every path and segment.
    """

    def __init__(self, known_categories: Sequence[str]) -> None:
        self.paths = list(known_categories)
        self.segment_counts: list[int] = []
        self.forms: dict[str, list[tuple[int, int]]] = {}
        for path_index, path in enumerate(self.paths):
            segments = path.lower().split("/")
            self.segment_counts.append(len(segments))
            for segment_index, segment in enumerate(segments):
                forms = {_stem(segment)} | {
                    _stem(part) for part in re.split(r"[-_]", segment) if len(part) > 2
                }
                for form in forms - _STOPWORDS:
                    self.forms.setdefault(form, []).append((path_index, segment_index))
        # Surface forms ("pets", "allergies", "biscuit's") of every segment form, to find
        # the segments a sentence names with one regex call.
        self.surface = {variant: form for form in self.forms for variant in _variants(form)}
        self.surface_re = _keyword_regex(self.surface) if self.surface else None

    def named_in(self, text: str) -> set[str]:
        """The segment forms that `text` names as words."""
        if self.surface_re is None:
            return set()
        lowered = text.lower().replace("’", "'")
        found = set()
        for match in self.surface_re.finditer(lowered):
            if _starts_word(lowered, match.start()):
                word = match.group()
                found.add(self.surface.get(word) or self.surface[word[:-2]])
        return found

    def best(self, words: Iterable[str], derived: Iterable[str]) -> str | None:
        """2 per segment named in the text, 1 per segment implied, -0.25 per other segment."""
        weights: dict[tuple[int, int], int] = {}
        for form in derived:
            for key in self.forms.get(form, ()):
                weights[key] = 1
        for form in words:
            for key in self.forms.get(form, ()):
                weights[key] = 2
        if not weights:
            return None
        totals: dict[int, list[int]] = {}
        for (path_index, _), weight in weights.items():
            total = totals.setdefault(path_index, [0, 0])
            total[0] += weight
            total[1] += 1
        # Highest score; on a tie the path listed first (deterministic).
        best_index = max(
            totals, key=lambda i: (totals[i][0] - 0.25 * (self.segment_counts[i] - totals[i][1]), -i)
        )
        return self.paths[best_index]


def choose_category(text: str, known_categories: Sequence[str], hints: Iterable[str] = ()) -> str:
    """The known category whose path segments best match `text`, else a new path from its topic."""
    sentence = _analyse(text, [(0, len(text))]).sentences[0]
    return _category_for(sentence, _CategoryIndex(known_categories), _hint_terms(hints))


def _hint_terms(hints: Iterable[str]) -> set[str]:
    """What hints (a markdown heading, say) imply: their word stems and their lexicon terms."""
    terms: set[str] = set()
    for hint in hints:
        terms.update(_stem(word.lower()) for word in _WORD_RE.findall(hint))
        if hint.strip():
            terms.update(_analyse(hint, [(0, len(hint))]).sentences[0].terms)  # 家人 -> family
    return terms - _STOPWORDS


def _category_for(sentence: _Sentence, index: _CategoryIndex, hint_terms: set[str]) -> str:
    derived = sentence.terms | hint_terms | (sentence.flags & {"preference", "profile"})
    return index.best(index.named_in(sentence.text), derived) or _new_category(sentence)


def _new_category(sentence: _Sentence) -> str:
    project = _PROJECT_RE.search(sentence.text) if "roject" in sentence.text else None
    if project:
        name = slug(project.group("after") or project.group("before"))
        if name and name not in _STOPWORDS:
            return f"projects/{name}"
    if "preference" in sentence.flags:
        return "owner/preferences"
    if "profile" in sentence.flags:
        return "owner/profile"
    for topic in _TOPIC_ORDER:
        if topic in sentence.topics:
            return _TOPIC_PATHS[topic]
    return "general"


def slug(segment: str) -> str:
    """One category segment: lowercase `[a-z0-9_-]`, at most 32 characters."""
    return _SEGMENT_RE.sub("-", segment.lower()).strip("-_")[:32].strip("-_")


# ---------------------------------------------------------------------------------------
# Facts
# ---------------------------------------------------------------------------------------


class Block(NamedTuple):
    """A piece of text to take facts from: a message, or a paragraph or bullet of a note."""

    text: str
    hints: tuple[str, ...] = ()  # words that hint at the category (a note's heading)
    from_assistant: bool = False  # only its links, commands and paths are worth keeping
    whole: bool = False  # one sentence as it is (a short bullet), not split further
    extra: Metadata = Metadata()  # found beside the text (a code fence under a bullet)


def facts_from_blocks(
    blocks: Sequence[Block],
    known_categories: Sequence[str],
    source: str,
    *,
    min_score: int = CONVERSATION_MIN_SCORE,
) -> list[FactDraft]:
    """The facts of some blocks, in order; every link, command and path in a block reaches a fact."""
    return _FactBuilder(_CategoryIndex(known_categories), source, min_score).run(blocks)


class _FactBuilder:
    """Turns blocks into FactDrafts.

    All blocks are joined and analysed in one go: analysing thousands of short messages one
    by one spent most of its time in per-call overhead. Blocks are joined by a blank line,
    which every scanner treats as a boundary, so nothing found spans two blocks.
    """

    _SEPARATOR = "\n\n"

    def __init__(self, index: _CategoryIndex, source: str, min_score: int) -> None:
        self.index, self.source, self.min_score = index, source, min_score
        self._hint_cache: dict[tuple[str, ...], set[str]] = {}

    def run(self, blocks: Sequence[Block]) -> list[FactDraft]:
        if not blocks:
            return []
        text = self._SEPARATOR.join(block.text for block in blocks)
        block_starts, offset = [], 0
        for block in blocks:
            block_starts.append(offset)
            offset += len(block.text) + len(self._SEPARATOR)
        spans = None
        if any(block.whole for block in blocks):
            spans = []
            for block, start in zip(blocks, block_starts):
                if block.whole:
                    _add_span(spans, text, start, start + len(block.text))
                else:
                    spans.extend((start + a, start + b) for a, b in _sentence_spans(block.text))
        sentences, stray_items = _analyse(text, spans)

        def block_of(offset: int) -> int:
            return bisect_right(block_starts, offset) - 1

        kept = [s for s in sentences if self._keep(s, blocks[block_of(s.start)])]
        carried = {(kind, value) for s in kept for _, kind, value in s.items}
        kept_ids = {id(s) for s in kept}
        dropped = [item for s in sentences if id(s) not in kept_ids for item in s.items]
        # A block's extra metadata goes with its last fact: placed at the block's end.
        extra = [
            (start + max(0, len(block.text) - 1), kind, value)
            for block, start in zip(blocks, block_starts)
            for kind in ("urls", "commands", "paths")
            for value in getattr(block.extra, kind)
        ]
        leftovers = [
            item for item in sorted(dropped + stray_items + extra) if (item[1], item[2]) not in carried
        ]
        extra_facts = self._place_leftovers(leftovers, kept, blocks, block_starts, block_of)
        facts = [(s.start, self._fact(s, blocks[block_of(s.start)])) for s in kept]
        return [fact for _, fact in sorted(facts + extra_facts, key=lambda pair: pair[0])]

    def _keep(self, sentence: _Sentence, block: Block) -> bool:
        if block.from_assistant:
            # The assistant mostly repeats the user; what it adds are links, commands, paths.
            return bool(sentence.items)
        return _is_informative(sentence, self.min_score)

    def _place_leftovers(
        self, leftovers, kept, blocks, block_starts, block_of
    ) -> list[tuple[int, FactDraft]]:
        """Give each leftover item to the nearest kept sentence of its block (the one before it
        if any); a block with leftovers but no kept sentence becomes a fact of its own."""
        if not leftovers:
            return []
        starts = [s.start for s in kept]
        orphans: dict[int, list[tuple[int, str, str]]] = {}
        for item in leftovers:
            block_index = block_of(item[0])
            before = bisect_right(starts, item[0]) - 1
            if before >= 0 and block_of(kept[before].start) == block_index:
                kept[before].items.append(item)
            elif before + 1 < len(kept) and block_of(kept[before + 1].start) == block_index:
                kept[before + 1].items.append(item)
            else:
                orphans.setdefault(block_index, []).append(item)
        extra = []
        for block_index, items in orphans.items():
            block = blocks[block_index]
            # (A block of nothing but a code fence is described by what it holds.)
            text = block.text if block.text.strip() else " ".join(value for _, _, value in items)
            whole = _analyse(text, [(0, len(text))]).sentences[0]
            whole.items = items
            extra.append((block_starts[block_index], self._fact(whole, block)))
        return extra

    def _fact(self, sentence: _Sentence, block: Block) -> FactDraft:
        hint_terms = self._hint_cache.get(block.hints)
        if hint_terms is None:
            hint_terms = self._hint_cache[block.hints] = _hint_terms(block.hints)
        return FactDraft(
            text=shorten(clean_sentence(sentence.text)),
            category=_category_for(sentence, self.index, hint_terms),
            importance=_importance(sentence, block.from_assistant),
            metadata=sentence.metadata,
            source=self.source,
        )


def distill_facts(messages: Messages, known_categories: list[str]) -> list[FactDraft]:
    """The facts worth storing from a conversation, mostly from the user's turns."""
    turns = [(role, content) for role, content in _iter_messages(messages) if role in ("user", "assistant")]
    # System prompts and tool output are not the owner's memories. Assistant turns count only
    # for their links, commands and paths: find which have any, all in one scan.
    assistant = [content for role, content in turns if role == "assistant"]
    with_items = _blocks_with_metadata(assistant)
    blocks = []
    assistant_index = 0
    for role, content in turns:
        if role == "user":
            blocks.append(Block(content))
        else:
            if assistant_index in with_items:
                blocks.append(Block(content, from_assistant=True))
            assistant_index += 1
    # The same thing said twice is one fact; what each saying links to is kept.
    by_key: dict[str, FactDraft] = {}
    for fact in facts_from_blocks(blocks, known_categories, "distill"):
        key = _dedupe_key(fact.text)
        first = by_key.get(key)
        if first is None:
            by_key[key] = fact
        elif fact.metadata != first.metadata:
            first.metadata = merge_metadata(first.metadata, fact.metadata)
    return list(by_key.values())


def _blocks_with_metadata(texts: list[str]) -> set[int]:
    """Indexes of the texts that hold a link, command or path (one scan over all of them)."""
    if not texts:
        return set()
    starts, offset = [], 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 2
    return {bisect_right(starts, item[0]) - 1 for item in locate_metadata("\n\n".join(texts))}


def _dedupe_key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


# ---------------------------------------------------------------------------------------
# Stage 2 and 3
# ---------------------------------------------------------------------------------------


def distill_structured(messages: Messages) -> Distilled:
    """Stage 2: the conversation as {fact, emotion, people, topics, actions, outcome}."""
    turns = list(_iter_messages(messages))
    # The owner's words describe the owner; fall back to everything for a one-sided log.
    chosen = [content for role, content in turns if role == "user"] or [content for _, content in turns]
    sentences = _analyse("\n\n".join(chosen)).sentences  # one pass: see _FactBuilder
    if not sentences:
        return Distilled(fact="")
    people: list[str] = []
    topics: list[str] = []
    actions: list[str] = []
    emotions: list[str] = []
    for sentence in sentences:
        _extend_unique(people, sentence.names)
        _extend_unique(topics, sentence.topics)
        _extend_unique(actions, sentence.actions)
        emotions.extend(sentence.emotions)
    outcome = _outcome(sentences)
    return Distilled(
        fact=_structured_fact(sentences, outcome),
        emotion=_dominant(emotions),
        people=people[:_MAX_PEOPLE],
        topics=topics[:_MAX_TOPICS],
        actions=actions[:_MAX_ACTIONS],
        outcome=outcome,
    )


def _extend_unique(items: list[str], new: Iterable[str]) -> None:
    for item in new:
        if item not in items:
            items.append(item)


def _dominant(labels: list[str]) -> str | None:
    """The most frequent label, the first seen on ties."""
    if not labels:
        return None
    counts = Counter(labels)
    return max(counts, key=lambda label: counts[label])  # max keeps the first of equal counts


def _structured_fact(sentences: list[_Sentence], outcome: str | None) -> str:
    """The most informative sentence (earliest on ties), with the outcome if there is room."""
    best, best_score = sentences[0], -1
    for sentence in sentences:
        score = -1 if sentence.filler else sentence.score - (2 if sentence.question else 0)
        if score > best_score:
            best, best_score = sentence, score
    fact = _shorten_bytes(clean_sentence(best.text).rstrip(".。!！"), STRUCTURED_FACT_MAX_BYTES)
    if outcome and outcome.lower() not in fact.lower():
        joined = f"{fact}; {outcome}"
        if _byte_length(joined) <= STRUCTURED_FACT_MAX_BYTES:
            fact = joined
    return fact


def _outcome(sentences: list[_Sentence]) -> str | None:
    """The last firm decision, else the last plan, else the last result, as a short clause."""
    for flag, pattern in _OUTCOME_PATTERNS:
        for sentence in reversed(sentences):
            match = pattern.search(sentence.text) if flag in sentence.flags else None
            if match:
                end = _CLAUSE_END_RE.search(sentence.text, match.end())
                clause = sentence.text[match.start() : end.start() if end else len(sentence.text)].strip()
                return _shorten_bytes(clause, _OUTCOME_MAX_BYTES) or None
    return None


_SUMMARY_DROP = frozenset(
    "a an the to of that this really just very so and our my your his her their".split()
)


def core_summary(d: Distilled) -> str:
    """Stage 3: a one-line summary of at most CORE_SUMMARY_MAX_BYTES UTF-8 bytes."""
    source = d.outcome or d.fact or " ".join(d.topics)
    words = [w for w in source.split() if w.lower() not in _SUMMARY_DROP]
    summary = ""
    for word in words:
        candidate = f"{summary} {word}" if summary else word
        if _byte_length(candidate) > CORE_SUMMARY_MAX_BYTES:
            # A first word longer than the limit (Chinese has no spaces) is cut instead.
            summary = summary or truncate_utf8(word, CORE_SUMMARY_MAX_BYTES)
            break
        summary = candidate
    return truncate_utf8(summary.rstrip(" ,;:-，；：、。."), CORE_SUMMARY_MAX_BYTES)
