//! Word lists of the fact signature. Each list is closed and small on
//! purpose: a word missing from a "not a fact" list only makes two
//! paraphrases count as different (harmless), never the reverse.

/// English negation markers and their canonical class (`n't` is handled by
/// the tokenizer as `not`).
pub(crate) fn en_negation(w: &str) -> Option<&'static str> {
    Some(match w {
        "not" | "cannot" | "dont" | "doesnt" | "didnt" | "isnt" | "wasnt" | "arent" | "werent" | "cant" | "wont"
        | "havent" | "hasnt" | "hadnt" | "wouldnt" | "shouldnt" | "couldnt" => "not",
        "never" => "never",
        "no" | "none" | "nobody" | "nothing" | "nowhere" | "neither" | "nor" | "noone" => "no",
        "without" => "without",
        _ => return None,
    })
}

/// English number words: cardinal and ordinal value, or the scale words.
pub(crate) enum NumberWord {
    /// A value that adds (`five`, `twenty`, `third`).
    Unit(f64),
    /// A multiplier (`hundred`, `thousand`, `million`, `dozen`).
    Scale(f64),
}

pub(crate) fn en_number(w: &str) -> Option<NumberWord> {
    use NumberWord::{Scale, Unit};
    Some(match w {
        "zero" => Unit(0.0),
        "one" | "first" => Unit(1.0),
        "two" => Unit(2.0),
        "three" | "third" => Unit(3.0),
        "four" | "fourth" => Unit(4.0),
        "five" | "fifth" => Unit(5.0),
        "six" | "sixth" => Unit(6.0),
        "seven" | "seventh" => Unit(7.0),
        "eight" | "eighth" => Unit(8.0),
        "nine" | "ninth" => Unit(9.0),
        "ten" | "tenth" => Unit(10.0),
        "eleven" | "eleventh" => Unit(11.0),
        "twelve" | "twelfth" => Unit(12.0),
        "thirteen" | "thirteenth" => Unit(13.0),
        "fourteen" | "fourteenth" => Unit(14.0),
        "fifteen" | "fifteenth" => Unit(15.0),
        "sixteen" | "sixteenth" => Unit(16.0),
        "seventeen" | "seventeenth" => Unit(17.0),
        "eighteen" | "eighteenth" => Unit(18.0),
        "nineteen" | "nineteenth" => Unit(19.0),
        "twenty" | "twentieth" => Unit(20.0),
        "thirty" | "thirtieth" => Unit(30.0),
        "forty" | "fortieth" => Unit(40.0),
        "fifty" | "fiftieth" => Unit(50.0),
        "sixty" | "sixtieth" => Unit(60.0),
        "seventy" | "seventieth" => Unit(70.0),
        "eighty" | "eightieth" => Unit(80.0),
        "ninety" | "ninetieth" => Unit(90.0),
        "half" => Unit(0.5),
        "hundred" | "hundredth" => Scale(100.0),
        "thousand" | "thousandth" => Scale(1_000.0),
        "million" | "millionth" => Scale(1_000_000.0),
        "billion" | "billionth" => Scale(1_000_000_000.0),
        "dozen" => Scale(12.0),
        _ => return None,
    })
}

/// Words after which a time unit or measure is a quantity (`every week`,
/// `a few days`), like a number.
pub(crate) fn en_quantifier(w: &str) -> bool {
    matches!(
        w,
        "a" | "an"
            | "every"
            | "each"
            | "per"
            | "last"
            | "next"
            | "this"
            | "that"
            | "few"
            | "several"
            | "couple"
            | "many"
            | "some"
            | "past"
            | "coming"
            | "same"
            | "whole"
            | "entire"
            | "one"
            | "half"
    )
}

/// Time words that date a fact whether or not a number is near.
pub(crate) fn en_time_word(w: &str) -> Option<&'static str> {
    Some(match w {
        "today" => "today",
        "tonight" => "tonight",
        "tomorrow" => "tomorrow",
        "yesterday" => "yesterday",
        "morning" | "mornings" => "morning",
        "afternoon" | "afternoons" => "afternoon",
        "evening" | "evenings" => "evening",
        "night" | "nights" | "overnight" => "night",
        "noon" | "midday" => "noon",
        "midnight" => "midnight",
        "weekend" | "weekends" => "weekend",
        "weekday" | "weekdays" => "weekday",
        "daily" => "daily",
        "weekly" => "weekly",
        "biweekly" => "biweekly",
        "monthly" => "monthly",
        "yearly" | "annually" | "annual" => "yearly",
        "hourly" => "hourly",
        "next" => "next",
        "last" | "previous" => "last",
        "ago" => "ago",
        "upcoming" => "upcoming",
        "early" => "early",
        "late" => "late",
        "mid" => "mid",
        "spring" => "spring",
        "summer" => "summer",
        "autumn" | "fall" => "autumn",
        "winter" => "winter",
        _ => return None,
    })
}

/// Weekday names (singular or plural, any case).
pub(crate) fn en_weekday(w: &str) -> Option<&'static str> {
    Some(match w.strip_suffix('s').unwrap_or(w) {
        "monday" | "mon" => "monday",
        "tuesday" | "tue" | "tues" => "tuesday",
        "wednesday" | "wed" => "wednesday",
        "thursday" | "thu" | "thur" | "thurs" => "thursday",
        "friday" | "fri" => "friday",
        "saturday" | "sat" => "saturday",
        "sunday" | "sun" => "sunday",
        _ => return None,
    })
}

/// English month names, in calendar order: what [`en_month`] gives for
/// every spelling it knows, and `EN_MONTHS[m - 1]` for month `m`.
pub(crate) const EN_MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Month names; `capitalised` says whether the word was written with a
/// capital (`may`, `march`, `sat`, `sun` … are months or days only then).
pub(crate) fn en_month(w: &str, capitalised: bool) -> Option<&'static str> {
    let i = match w {
        "january" | "jan" => 0,
        "february" | "feb" => 1,
        "march" | "mar" => 2,
        "april" | "apr" => 3,
        "may" => 4,
        "june" | "jun" => 5,
        "july" | "jul" => 6,
        "august" | "aug" => 7,
        "september" | "sep" | "sept" => 8,
        "october" | "oct" => 9,
        "november" | "nov" => 10,
        "december" | "dec" => 11,
        _ => return None,
    };
    let m = EN_MONTHS[i];
    let ambiguous = matches!(w, "march" | "mar" | "may" | "jan" | "jun" | "jul" | "aug" | "sep" | "dec");
    (capitalised || !ambiguous).then_some(m)
}

/// Time units and measures, canonical singular; counted after a number or
/// quantifier only.
pub(crate) fn en_unit(w: &str) -> Option<&'static str> {
    Some(match w {
        "second" | "seconds" | "sec" | "secs" => "second",
        "minute" | "minutes" | "min" | "mins" => "minute",
        "hour" | "hours" | "hr" | "hrs" | "h" => "hour",
        "day" | "days" => "day",
        "week" | "weeks" | "wk" | "wks" => "week",
        "fortnight" | "fortnights" => "fortnight",
        "month" | "months" | "mo" | "mos" => "month",
        "year" | "years" | "yr" | "yrs" => "year",
        "decade" | "decades" => "decade",
        "century" | "centuries" => "century",
        "km" | "kilometer" | "kilometers" | "kilometre" | "kilometres" => "km",
        "mile" | "miles" | "mi" => "mile",
        "m" | "meter" | "meters" | "metre" | "metres" => "m",
        "cm" | "centimeter" | "centimeters" | "centimetre" | "centimetres" => "cm",
        "mm" | "millimeter" | "millimeters" | "millimetre" | "millimetres" => "mm",
        "ft" | "foot" | "feet" => "ft",
        "inch" | "inches" => "in",
        "yard" | "yards" | "yd" => "yd",
        "kg" | "kilo" | "kilos" | "kilogram" | "kilograms" => "kg",
        "g" | "gram" | "grams" => "g",
        "lb" | "lbs" | "pound" | "pounds" => "lb",
        "oz" | "ounce" | "ounces" => "oz",
        "l" | "liter" | "liters" | "litre" | "litres" => "l",
        "ml" | "milliliter" | "milliliters" | "millilitre" | "millilitres" => "ml",
        "gallon" | "gallons" | "gal" => "gal",
        "percent" | "pct" => "%",
        "degree" | "degrees" => "degree",
        "mph" => "mph",
        "calorie" | "calories" | "kcal" | "cal" => "kcal",
        "gb" => "gb",
        "tb" => "tb",
        _ => return None,
    })
}

/// Currency words and signs, canonical as a sign.
pub(crate) fn en_currency(w: &str) -> Option<&'static str> {
    Some(match w {
        "dollar" | "dollars" | "usd" | "buck" | "bucks" => "$",
        "euro" | "euros" | "eur" => "€",
        "gbp" | "sterling" | "quid" => "£",
        "yen" | "jpy" => "yen",
        "yuan" | "rmb" | "cny" | "renminbi" => "¥",
        "cent" | "cents" => "cent",
        _ => return None,
    })
}

/// Currency signs.
pub(crate) fn currency_sign(c: char) -> Option<&'static str> {
    Some(match c {
        '$' => "$",
        '€' => "€",
        '£' => "£",
        '¥' => "¥",
        '₹' => "₹",
        '₩' => "₩",
        '%' => "%",
        _ => return None,
    })
}

/// Whom a text is about: pronouns by person and number, kinship and role
/// words (canonical). A change of person is a change of fact ("my sister" /
/// "my brother").
pub(crate) fn en_person(w: &str) -> Option<&'static str> {
    Some(match w {
        "i" | "me" | "my" | "mine" | "myself" => "i",
        "we" | "us" | "our" | "ours" | "ourselves" => "we",
        "you" | "your" | "yours" | "yourself" | "yourselves" => "you",
        "he" | "him" | "his" | "himself" => "he",
        "she" | "her" | "hers" | "herself" => "she",
        "they" | "them" | "their" | "theirs" | "themselves" => "they",
        "mother" | "mom" | "mum" | "mommy" | "mummy" | "mama" | "mothers" | "moms" => "mother",
        "father" | "dad" | "daddy" | "papa" | "fathers" | "dads" => "father",
        "parent" | "parents" => "parent",
        "sister" | "sisters" | "sis" => "sister",
        "brother" | "brothers" | "bro" => "brother",
        "sibling" | "siblings" => "sibling",
        "son" | "sons" => "son",
        "daughter" | "daughters" => "daughter",
        "child" | "children" | "kid" | "kids" => "child",
        "baby" | "babies" => "baby",
        "wife" | "wives" => "wife",
        "husband" | "husbands" => "husband",
        "spouse" | "partner" | "partners" => "partner",
        "boyfriend" | "boyfriends" => "boyfriend",
        "girlfriend" | "girlfriends" => "girlfriend",
        "fiance" | "fiancee" | "fiancé" | "fiancée" => "fiance",
        "friend" | "friends" => "friend",
        "colleague" | "colleagues" | "coworker" | "coworkers" => "colleague",
        "boss" | "manager" => "boss",
        "neighbor" | "neighbors" | "neighbour" | "neighbours" => "neighbor",
        "roommate" | "roommates" | "flatmate" | "flatmates" => "roommate",
        "cousin" | "cousins" => "cousin",
        "aunt" | "aunts" | "auntie" => "aunt",
        "uncle" | "uncles" => "uncle",
        "niece" | "nieces" => "niece",
        "nephew" | "nephews" => "nephew",
        "grandmother" | "grandma" | "granny" | "grandmothers" => "grandmother",
        "grandfather" | "grandpa" | "grandad" | "granddad" | "grandfathers" => "grandfather",
        "grandparent" | "grandparents" => "grandparent",
        "grandson" | "granddaughter" | "grandchild" | "grandchildren" | "grandkids" => "grandchild",
        "teacher" | "teachers" => "teacher",
        "doctor" | "doctors" => "doctor",
        "dog" | "dogs" | "puppy" => "dog",
        "cat" | "cats" | "kitten" => "cat",
        _ => return None,
    })
}

/// Words that start sentences without being names (compared in lower case).
pub(crate) fn en_function_word(w: &str) -> bool {
    matches!(
        w,
        "the"
            | "a"
            | "an"
            | "this"
            | "that"
            | "these"
            | "those"
            | "it"
            | "its"
            | "it's"
            | "there"
            | "here"
            | "and"
            | "but"
            | "so"
            | "or"
            | "if"
            | "when"
            | "while"
            | "after"
            | "before"
            | "because"
            | "since"
            | "also"
            | "then"
            | "just"
            | "actually"
            | "recently"
            | "currently"
            | "finally"
            | "please"
            | "yes"
            | "yeah"
            | "ok"
            | "okay"
            | "well"
            | "oh"
            | "hi"
            | "hello"
            | "hey"
            | "thanks"
            | "thank"
            | "what"
            | "which"
            | "who"
            | "whom"
            | "whose"
            | "where"
            | "how"
            | "why"
            | "as"
            | "at"
            | "in"
            | "on"
            | "for"
            | "from"
            | "with"
            | "to"
            | "of"
            | "by"
            | "about"
            | "into"
            | "during"
            | "every"
            | "each"
            | "all"
            | "some"
            | "any"
            | "many"
            | "much"
            | "most"
            | "more"
            | "both"
            | "either"
            | "maybe"
            | "perhaps"
            | "still"
            | "even"
            | "only"
            | "again"
            | "now"
            | "once"
            | "sometimes"
            | "usually"
            | "often"
            | "always"
            | "really"
            | "definitely"
            | "probably"
            | "honestly"
            | "anyway"
            | "besides"
            | "however"
            | "though"
            | "although"
            | "unless"
            | "until"
            | "like"
            | "other"
            | "another"
            | "such"
            | "do"
            | "does"
            | "did"
            | "is"
            | "are"
            | "was"
            | "were"
            | "be"
            | "been"
            | "have"
            | "has"
            | "had"
            | "will"
            | "would"
            | "can"
            | "could"
            | "should"
            | "may"
            | "might"
            | "must"
            | "let"
            | "let's"
            | "lets"
            | "sure"
            | "great"
            | "good"
            | "nice"
            | "speaking"
            | "by the way"
            | "btw"
            | "anyhow"
            | "plus"
            | "overall"
            | "instead"
            | "otherwise"
            | "meanwhile"
            | "later"
            | "earlier"
            | "first"
            | "lastly"
            | "anything"
            | "something"
            | "everything"
            | "everyone"
            | "someone"
            | "anyone"
            | "not"
            | "no"
            | "never"
            | "being"
            | "having"
            | "getting"
            | "going"
            | "around"
            | "over"
            | "under"
            | "up"
            | "down"
            | "out"
            | "off"
            | "through"
            | "between"
            | "among"
            | "against"
            | "without"
            | "within"
            | "along"
            | "across"
            | "behind"
            | "near"
            | "per"
            | "via"
            | "than"
            | "whether"
            | "yet"
            | "nor"
    )
}

/// Chinese negation words, longest first, with their canonical class.
pub(crate) const ZH_NEGATIONS: &[(&str, &str)] = &[
    ("并非", "非"),
    ("毫无", "无"),
    ("没有", "没"),
    ("不要", "不"),
    ("不用", "不"),
    ("不必", "不"),
    ("不", "不"),
    ("没", "没"),
    ("别", "不"),
    ("勿", "不"),
    ("莫", "不"),
    ("甭", "不"),
    ("未", "没"),
    ("无", "无"),
    ("非", "非"),
    ("否", "非"),
];

/// Chinese compounds holding a negation character that do not negate; kept
/// whole as content (`不错` = good, `别人` = others, `未来` = future).
pub(crate) const ZH_NOT_NEGATIONS: &[&str] = &[
    "不好意思",
    "不得不",
    "差不多",
    "对不起",
    "了不起",
    "不错",
    "不断",
    "不久",
    "不如",
    "别人",
    "别的",
    "区别",
    "分别",
    "告别",
    "级别",
    "类别",
    "性别",
    "无聊",
    "无线",
    "无数",
    "未来",
    "莫名",
    "没关系",
];

/// Chinese function words of two or more characters (connectives, degree
/// adverbs, hedges, "feel"), skipped. Longest match first; `一点` and `十分`
/// are decided in context (a clock time, ten minutes).
pub(crate) const ZH_FUNCTION_WORDS: &[&str] = &[
    "除此之外",
    "有点儿",
    "一会儿",
    "非常",
    "十分",
    "特别",
    "超级",
    "有点",
    "有些",
    "一点",
    "一些",
    "一下",
    "一起",
    "一直",
    "一定",
    "一样",
    "一般",
    "一切",
    "一边",
    "一会",
    "比较",
    "已经",
    "正在",
    "还是",
    "但是",
    "可是",
    "不过",
    "不仅",
    "不但",
    "而且",
    "并且",
    "因为",
    "所以",
    "如果",
    "虽然",
    "然后",
    "或者",
    "还有",
    "就是",
    "其实",
    "另外",
    "这个",
    "那个",
    "这些",
    "那些",
    "感到",
    "感觉",
    "觉得",
    "无论",
    "不管",
    "是否",
    "否则",
    "真的",
    "的话",
    "好像",
    "大概",
    "大约",
    "左右",
    "不是特别",
    "不那么",
    "不是很",
    "不是太",
    "不怎么",
    "不太",
    "不很",
    "不大",
];

/// Chinese function characters: particles, prepositions, conjunctions,
/// degree adverbs, copula, modal verbs, demonstratives. Pronouns and every
/// content character are not here.
pub(crate) fn zh_function_char(c: char) -> bool {
    matches!(
        c,
        '的' | '地'
            | '得'
            | '了'
            | '着'
            | '过'
            | '是'
            | '在'
            | '和'
            | '与'
            | '跟'
            | '同'
            | '及'
            | '并'
            | '而'
            | '也'
            | '都'
            | '就'
            | '才'
            | '又'
            | '还'
            | '很'
            | '太'
            | '更'
            | '最'
            | '挺'
            | '真'
            | '吗'
            | '呢'
            | '吧'
            | '啊'
            | '呀'
            | '哦'
            | '嗯'
            | '啦'
            | '嘛'
            | '哈'
            | '哇'
            | '把'
            | '被'
            | '给'
            | '让'
            | '对'
            | '从'
            | '向'
            | '往'
            | '到'
            | '会'
            | '要'
            | '能'
            | '可'
            | '以'
            | '将'
            | '已'
            | '这'
            | '那'
            | '其'
            | '之'
            | '所'
            | '为'
            | '于'
            | '此'
            | '么'
            | '个'
            | '些'
            | '约'
            | '时'
    )
}

/// Chinese classifiers, skipped after a numeral or demonstrative (`一只`,
/// `两次`, `这部`): the count is the fact. Classifiers that carry meaning
/// (`岁`, `名`, `年`, `天`, `点`) are not here.
pub(crate) fn zh_classifier(c: char) -> bool {
    matches!(
        c,
        '个' | '只'
            | '位'
            | '件'
            | '本'
            | '部'
            | '张'
            | '条'
            | '辆'
            | '场'
            | '遍'
            | '种'
            | '份'
            | '双'
            | '对'
            | '群'
            | '把'
            | '座'
            | '台'
            | '支'
            | '杯'
            | '瓶'
            | '碗'
            | '盘'
            | '片'
            | '颗'
            | '粒'
            | '朵'
            | '棵'
            | '首'
            | '篇'
            | '封'
            | '门'
            | '项'
            | '套'
            | '幅'
            | '顿'
            | '次'
            | '趟'
            | '回'
            | '道'
            | '家'
            | '块'
            | '串'
            | '堆'
            | '批'
            | '层'
            | '间'
            | '所'
            | '节'
    )
}

/// English words that qualify a claim rather than name its content: tense
/// (`was`, `had`, `did`, `used` to), modality and plans (`will`, `would`,
/// `can`, `might`, `going` to), an end (`anymore`, no `longer`), frequency
/// (`always`, `often`, `sometimes`), comparison (`more`, `less`, `than`),
/// restriction and hedges (`only`, `almost`, `maybe`, `probably`), a
/// former state (`former`, `ex`), and bounds in time, place or amount
/// (`before`, `after`, `until`, `since`, `unless`, `under`, `over`,
/// `between`, `except`), mapped to one
/// spelling each (the stems of contracted and negated auxiliaries
/// included: `'ll`, `'d`, `wo` of `won't`, `ca` of `can't`, `wouldnt`). "I quit" / "I will quit" and "I used to smoke" / "I
/// smoke" state different facts, so any difference in these words is one
/// ([`super::FactKind::Qualifier`]). Words that only stress a claim that
/// holds either way ("I still play" / "I play", "already", "again") are not
/// here.
pub(crate) fn en_marker(w: &str) -> Option<&'static str> {
    Some(match w {
        "will" | "ll" | "wo" | "wont" => "will",
        "would" | "d" | "wouldnt" => "would",
        "shall" | "sha" => "shall",
        "should" | "shouldnt" => "should",
        "can" | "ca" | "cannot" | "cant" => "can",
        "could" | "couldnt" => "could",
        "may" => "may",
        "might" => "might",
        "must" => "must",
        "ought" => "ought",
        "used" => "used",
        "going" | "gonna" => "going",
        "was" | "were" | "wasnt" | "werent" => "was",
        "had" | "hadnt" => "had",
        "did" | "didnt" => "did",
        "anymore" => "anymore",
        "longer" => "longer",
        "always" => "always",
        "usually" | "normally" | "typically" | "generally" => "usually",
        "often" | "frequently" => "often",
        "sometimes" | "occasionally" => "sometimes",
        "rarely" | "seldom" | "hardly" | "barely" => "rarely",
        "more" => "more",
        "less" | "fewer" => "less",
        "most" => "most",
        "least" => "least",
        "than" => "than",
        "only" => "only",
        "almost" | "nearly" => "almost",
        "maybe" | "perhaps" | "possibly" => "maybe",
        "probably" | "likely" => "probably",
        "former" | "formerly" | "previously" | "ex" => "former",
        "earlier" | "sooner" => "earlier",
        "later" => "later",
        // Bounds in time, place or amount: "closed until Friday" / "closed
        // Friday", "under 500 dollars" / "500 dollars", "before and after
        // meals" / "after meals".
        "after" => "after",
        "before" => "before",
        "since" => "since",
        "until" | "till" => "until",
        "unless" => "unless",
        "under" | "underneath" | "beneath" => "under",
        "over" => "over",
        "above" => "above",
        "below" => "below",
        "beyond" => "beyond",
        "within" => "within",
        "except" => "except",
        "between" => "between",
        _ => return None,
    })
}

/// English prepositions and conjunctions: the relation between the things a
/// claim names. One in place of another ("in" / "on the drawer", a flight
/// "to" / "from" Tokyo, tea "and" / "or" coffee, "when" / "if" it rains) is
/// a different fact; one only added or dropped is rewording ("on Tuesdays" /
/// "every Tuesday"). Bounds whose mere presence changes a claim ("before",
/// "until", "under") are [`en_marker`]s instead.
pub(crate) fn en_relation(w: &str) -> Option<&'static str> {
    Some(match w {
        "from" => "from",
        "to" => "to",
        "into" => "into",
        "onto" => "onto",
        "in" => "in",
        "on" => "on",
        "at" => "at",
        "behind" => "behind",
        "beside" | "besides" => "beside",
        "near" => "near",
        "inside" => "inside",
        "outside" => "outside",
        "through" => "through",
        "across" => "across",
        "against" => "against",
        "toward" | "towards" => "toward",
        "with" => "with",
        "for" => "for",
        "by" => "by",
        "of" => "of",
        "about" => "about",
        "during" => "during",
        "around" => "around",
        "off" => "off",
        "out" => "out",
        "up" => "up",
        "down" => "down",
        "per" => "per",
        "via" => "via",
        "among" => "among",
        "upon" => "upon",
        "and" => "and",
        "or" => "or",
        "nor" => "nor",
        "but" => "but",
        "if" => "if",
        "when" | "whenever" => "when",
        "while" => "while",
        "because" => "because",
        "although" | "though" => "although",
        "instead" => "instead",
        _ => return None,
    })
}

/// Chinese function words and characters that qualify a claim (see
/// [`en_marker`]): future and plans (`会`, `要`, `将`), experience (`过`:
/// 我去过北京 / 我去北京), comparison (`更`, `最`), who acts on whom (`把`,
/// `被`, `让`), ability and possibility (`能`, `可` of 可以 / 可能),
/// certainty (`一定`, `大概`, `好像`). Stress that holds either way (`已经`, `还`, `一直`) is
/// not here.
pub(crate) fn zh_marker(w: &str) -> Option<&'static str> {
    Some(match w {
        "会" => "会",
        "要" => "要",
        "将" => "将",
        "过" => "过",
        "更" => "更",
        // Who acts on whom: 我被他骂了 / 我骂了他.
        "把" => "把",
        "被" => "被",
        "让" => "让",
        // Ability and possibility: 我可能对花生过敏 / 我对花生过敏.
        "能" => "能",
        "可" => "可",
        // Aspect: done or become (我吃早饭 / 我吃了早饭), lasting (门开着),
        // in progress (我正在找工作 / 我找工作).
        "了" => "了",
        "着" => "着",
        "正在" => "正在",
        // Quantity and condition: 我的同事都会说 / 我有些同事会说, 如果下雨.
        "都" => "都",
        "有些" | "一些" => "有些",
        "如果" => "如果",
        "最" => "最",
        "一定" => "一定",
        "大概" | "大约" | "左右" => "大概",
        "好像" => "好像",
        // Not very, not often: a hedge on the negation (我不太喝咖啡 /
        // 我不喝咖啡).
        "不太" | "不怎么" | "不是很" | "不是太" | "不是特别" | "不那么" | "不很" | "不大" => {
            "不太"
        }
        _ => return None,
    })
}

/// Chinese coverbs and conjunctions (see [`en_relation`]): `从` / `到` /
/// `在` / `向` / `往` / `对` / `给`, `和` / `或者`.
pub(crate) fn zh_relation(w: &str) -> Option<&'static str> {
    Some(match w {
        "给" => "给",
        "从" => "从",
        "到" => "到",
        "在" => "在",
        "向" => "向",
        "往" => "往",
        "对" => "对",
        "和" | "与" | "跟" | "同" | "及" => "和",
        "或者" => "或者",
        "为" => "为",
        "于" => "于",
        // 他八点才到 (not until eight) / 他八点就到 (already at eight).
        "才" => "才",
        "就" => "就",
        _ => return None,
    })
}

/// English quantifiers, mapped to one spelling each: one in place of
/// another ("allergic to all nuts" / "to some nuts") is a different fact,
/// and so is one only added or dropped ("Some of my colleagues speak
/// Dutch" / "My colleagues speak Dutch"), except `every` / `each`, which
/// reword a time ("every Tuesday" / "on Tuesdays") and count only in place
/// of another quantifier.
pub(crate) fn en_quantity(w: &str) -> Option<&'static str> {
    Some(match w {
        "every" | "each" => "every",
        "all" => "all",
        "some" | "several" => "some",
        "many" => "many",
        "few" => "few",
        "any" => "any",
        "both" => "both",
        "either" => "either",
        // Which one: "every other Tuesday" / "every Tuesday", "my other
        // car" / "my car".
        "other" | "another" => "other",
        _ => return None,
    })
}

/// The grammatical role a personal pronoun marks: `subject i` for "I",
/// `object i` for "me", and so on ("her" and "you", which read both ways,
/// are not here). "I owe him" / "He owes me" name the same two persons in
/// other roles.
pub(crate) fn en_pronoun_role(w: &str) -> Option<&'static str> {
    Some(match w {
        "i" => "subject i",
        "me" => "object i",
        "we" => "subject we",
        "us" => "object we",
        "he" => "subject he",
        "him" => "object he",
        "she" => "subject she",
        "they" => "subject they",
        "them" => "object they",
        _ => return None,
    })
}
