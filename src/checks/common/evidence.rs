//! How findings present lists as evidence.

/// Shortens a list for evidence: the first `n` and how many more.
pub fn capped(items: impl IntoIterator<Item = String>, n: usize) -> Vec<String> {
    let all: Vec<String> = items.into_iter().collect();
    let more = all.len().saturating_sub(n);
    let mut out: Vec<String> = all.into_iter().take(n).collect();
    if more > 0 {
        out.push(format!("… and {more} more"));
    }
    out
}

/// "subnet a" or "subnets a, b", for a message.
pub fn subnet_words<S: AsRef<str>>(ids: &[S]) -> String {
    let ids: Vec<&str> = ids.iter().map(AsRef::as_ref).collect();
    match ids.as_slice() {
        [one] => format!("subnet {one}"),
        many => format!("subnets {}", many.join(", ")),
    }
}
