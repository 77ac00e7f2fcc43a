//! A MIME multipart archive read the way Go's standard library reads it, which is how
//! Karpenter (`pkg/providers/amifamily/bootstrap/mime/mime.go`, `eksbootstrap.go`) and nodeadm
//! (`nodeadm/internal/configprovider/mime.go`) read `spec.userData`: `net/mail.ReadMessage`,
//! `mime.ParseMediaType`, then `multipart.Reader.NextPart` and `io.ReadAll` of each part. Its
//! outcomes were checked case by case against Go itself (the table in `super::tests`); a crate
//! that reads MIME its own way would call archives Karpenter launches broken, or the reverse.

use std::collections::BTreeMap;

pub const NODECONFIG_TYPE: &str = "application/node.eks.aws";

/// One part of a MIME archive: its `Content-Type` as written ("" when it has none) and its
/// body.
pub struct Part {
    pub content_type: String,
    pub body: String,
}

impl Part {
    pub fn new(content_type: &str, body: &[u8]) -> Part {
        Part {
            content_type: content_type.to_string(),
            body: String::from_utf8_lossy(body).into_owned(),
        }
    }

    /// The media type in lower case, without parameters, as nodeadm compares it (`""` when the
    /// part has no `Content-Type` or it does not parse).
    pub fn media_type(&self) -> String {
        parse_media_type(&self.content_type)
            .map(|(media_type, _)| media_type)
            .unwrap_or_default()
    }
}

/// A MIME archive as Go's readers leave it.
pub struct Archive {
    pub parts: Vec<Part>,
    /// The input ended after the last part on a line that is neither the closing
    /// `--BOUNDARY--` nor a whole `--BOUNDARY` line with its newline (or, with no part at all,
    /// anywhere). Go's `multipart.Reader.NextPart` then returns `io.EOF` wrapped
    /// ("multipart: NextPart: EOF"): Karpenter's readers take it for the end of the archive
    /// (`errors.Is(err, io.EOF)` in `mime/mime.go` and `eksbootstrap.go`), nodeadm's does not
    /// (`err == io.EOF` in `nodeadm/internal/configprovider/mime.go`).
    pub unclosed: bool,
}

/// Why Go's readers reject a MIME archive, and the line at fault when there is one.
pub struct MimeError {
    pub why: String,
    pub line: Option<String>,
}

impl MimeError {
    pub fn new(why: impl Into<String>) -> MimeError {
        MimeError {
            why: why.into(),
            line: None,
        }
    }

    pub fn at(why: impl Into<String>, line: &[u8]) -> MimeError {
        MimeError {
            why: why.into(),
            line: Some(
                String::from_utf8_lossy(line)
                    .trim_end()
                    .chars()
                    .take(200)
                    .collect(),
            ),
        }
    }
}

/// The parts of a MIME multipart archive, read as Karpenter reads them, or why it cannot be.
///
/// This follows the Go calls that Karpenter makes (`mime/mime.go` `NewArchive` for AL2023,
/// `eksbootstrap.go` `copyCustomUserDataParts` for AL2) and nodeadm makes on the node:
/// `net/mail.ReadMessage`, `mime.ParseMediaType` of its `Content-Type`, then
/// `multipart.Reader.NextPart` and `io.ReadAll` of each part, as Go 1.21 and later behave
/// (Karpenter builds with a later Go). In particular an archive may end right after a
/// `--BOUNDARY` line, as Karpenter's documented AL2023 example does: Go then reads no further
/// part. Only the end of the input inside a part (no boundary line after it) is an error.
pub fn mime_parts(text: &str) -> Result<Archive, MimeError> {
    let b = text.as_bytes();
    let mut pos = 0;
    let (fields, ended) = read_header(b, &mut pos, false)?;
    if ended && fields.is_empty() {
        return Err(MimeError::new(
            "its header ends with the input before a whole field (Go: EOF)",
        ));
    }
    let ctype = content_type(&fields);
    let (media_type, params) = parse_media_type(ctype).map_err(|e| {
        MimeError::new(if ctype.is_empty() {
            format!("it has no Content-Type header (is there a blank line before the headers?) (Go: {e})")
        } else if e == INVALID_PARAMETER {
            format!("its Content-Type header does not parse (Go: {e}; a boundary with characters such as / must be quoted: boundary=\"//\")")
        } else {
            format!("its Content-Type header does not parse (Go: {e})")
        })
    })?;
    if !media_type.starts_with("multipart/") {
        return Err(MimeError::new(format!(
            "its Content-Type is {media_type}, not multipart/*"
        )));
    }
    let boundary = params.get("boundary").map_or("", String::as_str);
    if boundary.is_empty() {
        return Err(MimeError::new(
            "its multipart Content-Type has no boundary parameter (Go: multipart: boundary is empty)",
        ));
    }
    let dash = format!("--{boundary}").into_bytes();
    let dash_dash = format!("--{boundary}--").into_bytes();
    // Lines end in "\r\n" unless the first boundary line ends in "\n" alone (Go's reader too).
    let mut nl: &[u8] = b"\r\n";
    let mut parts = Vec::new();
    let mut parts_read = 0usize;
    // `NextPart`: skip what comes before the first boundary line; after a part, only its
    // newline and the next boundary line may follow.
    'parts: loop {
        let mut expect_new_part = false;
        loop {
            let (line, at_end) = read_slice(b, &mut pos);
            if is_final_boundary(line, &dash_dash, nl) {
                break 'parts;
            }
            if at_end {
                return Ok(Archive {
                    parts,
                    unclosed: true,
                });
            }
            if let Some(rest) = line.strip_prefix(dash.as_slice()) {
                let rest = skip_lwsp(rest);
                if parts_read == 0 && rest == b"\n" {
                    nl = b"\n";
                }
                if rest == nl {
                    parts_read += 1;
                    let (part_fields, ended) = read_header(b, &mut pos, true)?;
                    if ended {
                        // The header reader's bare io.EOF, which NextPart passes on: the end.
                        break 'parts;
                    }
                    let nl_dash = [nl, dash.as_slice()].concat();
                    let Some(end) = part_end(b, pos, &dash, &nl_dash) else {
                        return Err(MimeError::new(format!(
                            "the input ends inside its last part: no --{boundary} or --{boundary}-- line follows it (Go: unexpected EOF)"
                        )));
                    };
                    parts.push(Part::new(content_type(&part_fields), &b[pos..end]));
                    pos = end;
                    continue 'parts;
                }
            }
            if expect_new_part {
                return Err(MimeError::at(
                    format!(
                        "a line stands where a --{boundary} or --{boundary}-- line must (Go: multipart: expecting a new Part)"
                    ),
                    line,
                ));
            }
            if parts_read > 0 {
                if line != nl {
                    return Err(MimeError::at(
                        format!(
                            "a line stands between a part and the next --{boundary} line (Go: multipart: unexpected line in Next())"
                        ),
                        line,
                    ));
                }
                expect_new_part = true;
            }
        }
    }
    Ok(Archive {
        parts,
        unclosed: false,
    })
}

type Fields = Vec<(String, String)>;

/// A header block as Go reads it, from `*pos` through the blank line that ends it: its fields,
/// and whether the input ended first. `part` reads a part's header as `mime/multipart` does
/// (`net/textproto`'s `readMIMEHeader`, which checks names and values); otherwise the archive's
/// own header as `net/mail.ReadMessage` does (its `readHeader`, which does not).
fn read_header(b: &[u8], pos: &mut usize, part: bool) -> Result<(Fields, bool), MimeError> {
    let mut fields = Vec::new();
    if matches!(b.get(*pos), Some(b' ' | b'\t')) {
        let line = read_line(b, pos).unwrap_or_default();
        return Err(MimeError::at(
            if part {
                "a part's header starts with a space or a tab (Go: malformed MIME header initial line)"
            } else {
                "its first line starts with a space or a tab (Go: malformed initial line)"
            },
            line,
        ));
    }
    loop {
        let Some(first) = read_line(b, pos) else {
            return Ok((fields, true));
        };
        if first.is_empty() {
            return Ok((fields, false));
        }
        if part && !first.contains(&b':') {
            return Err(MimeError::at(
                "a line of a part's header has no colon (is the blank line after the part's header missing?) (Go: malformed MIME header: missing colon)",
                first,
            ));
        }
        let mut kv = trim_lwsp(first).to_vec();
        // Lines that start with a space or a tab continue the one before.
        while matches!(b.get(*pos), Some(b' ' | b'\t')) {
            while matches!(b.get(*pos), Some(b' ' | b'\t')) {
                *pos += 1;
            }
            let Some(more) = read_line(b, pos) else {
                return Ok((fields, true));
            };
            kv.push(b' ');
            kv.extend_from_slice(trim_lwsp(more));
        }
        if kv.is_empty() {
            // A line of spaces only (net/mail): the end of the header, like a blank line.
            return Ok((fields, false));
        }
        let Some(colon) = kv.iter().position(|&c| c == b':') else {
            return Err(MimeError::at(
                "a line of its header has no colon (is the blank line after the header missing?) (Go: malformed header line)",
                &kv,
            ));
        };
        let (name, value) = (&kv[..colon], &kv[colon + 1..]);
        if part {
            let bad_name =
                name.is_empty() || name.iter().any(|&c| c != b' ' && !header_name_byte(c));
            let bad_value = value.iter().any(|&c| (c < b' ' && c != b'\t') || c == 0x7f);
            if bad_name || bad_value {
                return Err(MimeError::at(
                    "a line of a part's header is not a valid header field (Go: malformed MIME header line)",
                    &kv,
                ));
            }
        } else if name.is_empty() {
            continue;
        }
        fields.push((
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(skip_lwsp(value)).into_owned(),
        ));
    }
}

/// A byte of a header field name (`net/textproto`'s `validHeaderFieldByte`).
fn header_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

/// The first `Content-Type` field's value, as Go's `Header.Get` finds it ("" when none).
fn content_type(fields: &[(String, String)]) -> &str {
    fields
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("Content-Type"))
        .map_or("", |(_, value)| value.as_str())
}

/// The next line from `*pos`, without its `\n` or `\r\n` (bufio's `ReadLine`); `None` at the
/// end of the input.
fn read_line<'a>(b: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let rest = b.get(*pos..).filter(|r| !r.is_empty())?;
    match rest.iter().position(|&c| c == b'\n') {
        Some(i) => {
            *pos += i + 1;
            let line = &rest[..i];
            Some(line.strip_suffix(b"\r").unwrap_or(line))
        }
        None => {
            *pos = b.len();
            Some(rest)
        }
    }
}

/// The next line from `*pos` with its `\n` (bufio's `ReadSlice`), and whether the input ended
/// before a `\n`.
fn read_slice<'a>(b: &'a [u8], pos: &mut usize) -> (&'a [u8], bool) {
    let rest = b.get(*pos..).unwrap_or_default();
    match rest.iter().position(|&c| c == b'\n') {
        Some(i) => {
            *pos += i + 1;
            (&rest[..=i], false)
        }
        None => {
            *pos = b.len();
            (rest, true)
        }
    }
}

fn skip_lwsp(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|&&c| c == b' ' || c == b'\t').count();
    &b[n..]
}

fn trim_lwsp(b: &[u8]) -> &[u8] {
    let b = skip_lwsp(b);
    let n = b
        .iter()
        .rev()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    &b[..b.len() - n]
}

/// `--BOUNDARY--`, spaces or tabs, then the end of the line or of the input
/// (`isFinalBoundary`).
fn is_final_boundary(line: &[u8], dash_dash: &[u8], nl: &[u8]) -> bool {
    line.strip_prefix(dash_dash).is_some_and(|rest| {
        let rest = skip_lwsp(rest);
        rest.is_empty() || rest == nl
    })
}

/// Where the body of the part that starts at `start` ends: at the newline before the next
/// boundary, or at `start` when a boundary follows the part's header at once; `None` when the
/// input ends first (`scanUntilBoundary` and `matchAfterPrefix` with the whole input at hand:
/// their `io.ErrUnexpectedEOF`).
fn part_end(b: &[u8], start: usize, dash: &[u8], nl_dash: &[u8]) -> Option<usize> {
    let rest = b.get(start..)?;
    if rest.starts_with(dash) && boundary_follows(&rest[dash.len()..]) {
        return Some(start);
    }
    let mut from = 0;
    while let Some(i) = find_bytes(&rest[from..], nl_dash) {
        let at = from + i;
        if boundary_follows(&rest[at + nl_dash.len()..]) {
            return Some(start + at);
        }
        from = at + 1;
    }
    None
}

/// Whether what follows `--BOUNDARY` makes it a boundary (`matchAfterPrefix`): the end of the
/// input, a space, a tab, a CR or LF, or `--`.
fn boundary_follows(after: &[u8]) -> bool {
    matches!(
        after,
        [] | [b' ' | b'\t' | b'\r' | b'\n', ..] | [b'-', b'-', ..]
    )
}

fn find_bytes(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

const INVALID_PARAMETER: &str = "mime: invalid media parameter";

/// Go's `mime.ParseMediaType`: the media type in lower case and the parameters (names in
/// lower case), or Go's error. RFC 2231 continuations (`boundary*0=`) are kept under their
/// own names, not joined.
pub fn parse_media_type(v: &str) -> Result<(String, BTreeMap<String, String>), String> {
    let base = v.split_once(';').map_or(v, |(base, _)| base);
    let media_type = base.to_lowercase().trim().to_string();
    check_media_type(&media_type)?;
    let mut params = BTreeMap::new();
    let mut rest = &v[base.len()..];
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let Some((key, value, after)) = consume_media_param(rest) else {
            if rest.trim() == ";" {
                // A trailing semicolon.
                break;
            }
            return Err(INVALID_PARAMETER.into());
        };
        if params.get(&key).is_some_and(|old| *old != value) {
            return Err("mime: duplicate parameter name".into());
        }
        params.insert(key, value);
        rest = after;
    }
    Ok((media_type, params))
}

/// `type/subtype`, or a lone `type`, each a token (`checkMediaTypeDisposition`).
fn check_media_type(s: &str) -> Result<(), String> {
    let (kind, rest) = consume_token(s);
    if kind.is_empty() {
        return Err("mime: no media type".into());
    }
    if rest.is_empty() {
        return Ok(());
    }
    let Some(rest) = rest.strip_prefix('/') else {
        return Err("mime: expected slash after first token".into());
    };
    let (subtype, rest) = consume_token(rest);
    if subtype.is_empty() {
        return Err("mime: expected token after slash".into());
    }
    if !rest.is_empty() {
        return Err("mime: unexpected content after media subtype".into());
    }
    Ok(())
}

const TSPECIALS: &[u8] = b"()<>@,;:\\\"/[]?=";

/// The longest leading token (RFC 2045: printable ASCII but tspecials) and what follows.
fn consume_token(v: &str) -> (&str, &str) {
    let n = v
        .bytes()
        .take_while(|c| c.is_ascii_graphic() && !TSPECIALS.contains(c))
        .count();
    v.split_at(n)
}

/// `; name=value` (`consumeMediaParam`): the name in lower case, the value, and what follows.
fn consume_media_param(v: &str) -> Option<(String, String, &str)> {
    let rest = v.trim_start().strip_prefix(';')?.trim_start();
    let (name, rest) = consume_token(rest);
    if name.is_empty() {
        return None;
    }
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let (value, after) = consume_value(rest)?;
    Some((name.to_ascii_lowercase(), value, after))
}

/// A token or a quoted string (`consumeValue`), and what follows.
fn consume_value(v: &str) -> Option<(String, &str)> {
    let Some(quoted) = v.strip_prefix('"') else {
        let (token, rest) = consume_token(v);
        return (!token.is_empty()).then(|| (token.to_string(), rest));
    };
    let mut value = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, &quoted[i + 1..])),
            // A backslash escapes a tspecial only; before anything else it is itself.
            '\\' if quoted[i + 1..]
                .bytes()
                .next()
                .is_some_and(|n| TSPECIALS.contains(&n)) =>
            {
                if let Some((_, escaped)) = chars.next() {
                    value.push(escaped);
                }
            }
            '\r' | '\n' => return None,
            _ => value.push(c),
        }
    }
    None
}
