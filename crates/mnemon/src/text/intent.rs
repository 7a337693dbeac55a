//! What a question asks for and what a memory states, read from their
//! wording, in English and Chinese: whether a question asks for advice or a
//! plan ([`asks_advice`]), and whether a memory states a standing
//! constraint or preference ([`is_standing`]): an allergy, a diet, a
//! dislike, an accessibility need, a budget, an "always" or "never".
//!
//! Recall uses them so that such a memory reaches the block of an advice
//! question whatever its cosine: "Hates cilantro" shares no word with
//! "What should I cook for dinner?", and a small encoder puts the two no
//! closer than unrelated pairs. The cue lists are closed classes of request
//! forms and constraint verbs, not topics: a missing cue leaves a memory to
//! the cosine floor as before.

use std::sync::OnceLock;

use regex::Regex;

/// English request forms that ask for advice, a recommendation or a plan.
/// Words that also name things ("the planning meeting", "the book",
/// "my order") count only as a request: opening the question ("Plan my
/// weekend") or after "you" or "we" ("Can you book …").
const EN_ADVICE: &str = r"(?ix)
    \b(recommend|recommendation|recommendations|suggest|suggestion|suggestions|advice|advise|ideas?|tips?)\b
    | ^\W*(please\s+)?(plan|organi[sz]e|arrange|book|reserve|order|choose|pick|decide)\b
    | \b(you|we)\s+(plan|organi[sz]e|arrange|book|reserve|order|choose|pick|decide)\b
    | \b(what|where|which|how)\s+(should|could|can|shall|would)\s+(i|we)\b
    | \b(should|could|can|shall)\s+(i|we)\s+(eat|drink|cook|make|bring|buy|get|try|go|visit|wear|take|do|order|have|book)\b
    | \bwhat\s+(to|do\s+you\s+think\s+i\s+should)\s+\w+
    | \bwhere\s+to\s+\w+
    | \b(help|helping)\s+(me|us)\s+(find|choose|pick|plan|decide|book|get|cook|make|prepare|organi[sz]e|figure)\b
    | \b(find|get|buy)\s+(me|us)\b
    | \b(good|nice|best)\s+(place|places|spot|spots|restaurant|restaurants|gift|gifts|option|options|way)\b
    | \b(for\s+(dinner|lunch|breakfast|tonight|the\s+weekend|my\s+trip))\b
    | \blet'?s\s+(go|get|plan|book|grab|have|make|cook|eat)\b
    | \bwhat\s+(gift|present|dish|meal|food|snack|drink|wine|restaurant|hotel|movie|book|activity)\b
";

/// Chinese request forms that ask for advice, a recommendation or a plan.
const ZH_ADVICE: &[&str] = &[
    "推荐",
    "建议",
    "帮我",
    "帮忙",
    "给我",
    "替我",
    "我该",
    "应该",
    "该怎么",
    "怎么安排",
    "安排",
    "计划",
    "规划",
    "订",
    "预订",
    "预定",
    "点什么",
    "点菜",
    "点外卖",
    "吃什么",
    "喝什么",
    "做什么菜",
    "做什么饭",
    "做点什么",
    "买什么",
    "送什么",
    "穿什么",
    "去哪玩",
    "去哪儿玩",
    "去哪吃",
    "去哪里玩",
    "哪里好",
    "哪家",
    "有什么好",
    "选",
    "挑",
    "准备",
    "出去玩",
    "怎么过",
    "适合",
    "可以吃",
    "能吃",
    "能喝",
    "能去",
    "能参加",
    "能带",
];

/// English statements of a standing constraint or preference.
const EN_STANDING: &str = r"(?ix)
    \b(allerg\w*|intoleran\w*|celiac|coeliac|diabet\w*|vegetarian|vegan|pescatarian|halal|kosher|gluten|lactose|dairy-free
      |sober|teetotal\w*|wheelchair|mobility|crutches|cane|walker|hearing\s+aid|deaf|blind|phobi\w*|afraid|scared|fear\w*
      |diet|dieting|budget|prefer\w*|favou?rite\w*|hates?|hated|hating|dislike\w*|detest\w*|loathe\w*|avoid\w*
      |can'?t\s+stand|cannot\s+stand|never|always|only|must|mustn'?t|no\s+more\s+than|at\s+most|up\s+to
      |can'?t|cannot|doesn'?t|don'?t|won'?t|not\s+allowed|forbidden|refuses?|love[sd]?|enjoys?|likes?
      |fasting|ramadan|lent|pregnan\w*|sensitiv\w*|(car|sea|air|motion)[\s-]?sick\w*|asthma\w*|migraine\w*|injur\w*)\b
";

/// Chinese statements of a standing constraint or preference.
const ZH_STANDING: &[&str] = &[
    "过敏",
    "不耐受",
    "忌口",
    "忌",
    "素食",
    "吃素",
    "纯素",
    "清真",
    "不吃",
    "不喝",
    "不能吃",
    "不能喝",
    "不碰",
    "戒",
    "不沾",
    "讨厌",
    "不喜欢",
    "受不了",
    "怕",
    "恐",
    "从不",
    "从来不",
    "总是",
    "一直",
    "只吃",
    "只喝",
    "只住",
    "只坐",
    "只用",
    "必须",
    "一定要",
    "不要",
    "不能",
    "不会",
    "预算",
    "不超过",
    "以内",
    "最多",
    "轮椅",
    "腿脚",
    "行动不便",
    "拐杖",
    "晕车",
    "晕船",
    "糖尿病",
    "高血压",
    "怀孕",
    "孕",
    "偏好",
    "喜欢",
    "爱吃",
    "爱喝",
    "最爱",
    "习惯",
    "坚持",
];

fn en_advice() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(EN_ADVICE).expect("advice pattern"))
}

fn en_standing() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(EN_STANDING).expect("standing pattern"))
}

/// The text with typographic apostrophes as ASCII ones.
fn plain(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('’') {
        std::borrow::Cow::Owned(text.replace('’', "'"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Whether `question` asks for advice, a recommendation or a plan ("What
/// should I cook tonight?", "Can you recommend a Thai place?", "帮我订个酒店",
/// "周末去哪玩"), as opposed to asking what the store holds.
///
/// A question about what was done ("What did Ana recommend?", "Which one
/// did we choose?", "我上次推荐了什么？") asks what the store holds,
/// whatever its words: an English question that opens in the past (`Did
/// we …`, a question word and then `did`, `was`, `were` or `had`), a
/// Chinese one with `了` or `过` after the cue.
pub fn asks_advice(question: &str) -> bool {
    let q = plain(question);
    if en_past().is_match(&q) {
        return false;
    }
    en_advice().is_match(&q)
        || ZH_ADVICE.iter().any(|c| q.find(c).is_some_and(|at| !q[at + c.len()..].contains(['了', '过'])))
}

/// An English question in the past: one that opens with `did`, `was`,
/// `were` or `had`, or with a question word and one of them within the
/// next three words ("Did we …", "What did …", "Which restaurant did …");
/// a later one ("… like the one we had last week", "I was thinking of a
/// trip, any ideas?") leaves it a request.
fn en_past() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(
            r"(?i)^\W*(?:(?:what|which|where|when|who|whom|whose|how|why)\b(?:\W+[\w']+){0,2}\W+)?(did|didn't|was|wasn't|were|weren't|had)\b",
        )
        .expect("past pattern")
    })
}

/// Whether `content` states a standing constraint or preference: an
/// allergy, diet, dislike or like, an accessibility need, a budget or
/// limit, an "always", "never" or "only".
pub fn is_standing(content: &str) -> bool {
    let c = plain(content);
    en_standing().is_match(&c) || ZH_STANDING.iter().any(|w| c.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_questions() {
        for q in [
            "What should I cook for dinner tonight?",
            "Can you recommend a Thai restaurant?",
            "Plan my weekend hike",
            "Help me pick a gift for Anna",
            "Where should we go on Saturday?",
            "帮我订个酒店",
            "Can you recommend a restaurant like the one we had last week?",
            "I was thinking of redecorating my living room, any ideas?",
            "周末去哪玩？",
            "今晚吃什么",
        ] {
            assert!(asks_advice(q), "{q}");
        }
        for q in [
            "When is my sister's birthday?",
            "Where do I live?",
            "What did Mark say?",
            "What did Mark say about the launch in the planning meeting?",
            "Which restaurant did Ana recommend?",
            "What did we end up choosing for the migration?",
            "When is the planning meeting?",
            "Where is the book I lent you?",
            "我住在哪个城市？",
            "上个月我去哪了",
            "二舅是做什么工作的？",
        ] {
            assert!(!asks_advice(q), "{q}");
        }
    }

    #[test]
    fn standing_statements() {
        for m in [
            "Hates cilantro",
            "Allergic to peanuts",
            "Doesn't drink alcohol",
            "Uses a wheelchair",
            "Keeps hotels to at most $150 a night",
            "我对花生过敏",
            "不吃辣",
            "预算每晚不超过800元",
        ] {
            assert!(is_standing(m), "{m}");
        }
        for m in ["Works as a nurse at St Mary's", "Moved to Lisbon in March", "我住在杭州西湖边", "上周去了苏州"]
        {
            assert!(!is_standing(m), "{m}");
        }
    }
}
