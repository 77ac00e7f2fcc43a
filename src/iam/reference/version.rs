//! Karpenter releases and the version ranges (`since`, `until`) the data file qualifies its
//! statements, actions and resources with.

use super::data::data;

/// A Karpenter release, `MAJOR.MINOR.PATCH`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u32, pub u32, pub u32);

impl Version {
    /// Reads `1.8.1`, `v1.8.1` or `1.8.1-rc.1` (pre-release suffixes are ignored).
    pub fn parse(text: &str) -> Option<Version> {
        let text = text.trim().trim_start_matches('v');
        let core = text.split(['-', '+']).next()?;
        let mut parts = core.split('.').map(str::parse::<u32>);
        let v = Version(
            parts.next()?.ok()?,
            parts.next()?.ok()?,
            parts.next()?.ok()?,
        );
        parts.next().is_none().then_some(v)
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// `since <= v <= until`, where an `until` of `1.8.x` covers every patch of 1.8.
pub(super) fn in_effect(v: Version, since: Option<&str>, until: Option<&str>) -> bool {
    let after = since.and_then(Version::parse).is_none_or(|s| v >= s);
    let before = match until {
        None => true,
        Some(u) => match u.strip_suffix(".x") {
            Some(minor) => {
                let mut p = minor.split('.').map(str::parse::<u32>);
                match (p.next(), p.next()) {
                    (Some(Ok(maj)), Some(Ok(min))) => (v.0, v.1) <= (maj, min),
                    _ => true,
                }
            }
            None => Version::parse(u).is_none_or(|u| v <= u),
        },
    };
    after && before
}

/// Which release's requirements apply to a controller version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// The data covers it.
    Covered(Version),
    /// Newer than the data: the newest release's requirements are used.
    Newer { used: Version },
    /// Older than the data: nothing to compare with.
    Older { minimum: Version },
}

pub fn coverage(v: Version) -> Option<Coverage> {
    let d = data()?;
    let minimum = Version::parse(&d.versions.minimum)?;
    let newest = Version::parse(&d.versions.newest)?;
    Some(if v < minimum {
        Coverage::Older { minimum }
    } else if v > newest {
        Coverage::Newer { used: newest }
    } else {
        Coverage::Covered(v)
    })
}

/// The newest release the data covers.
pub fn newest() -> Option<Version> {
    Version::parse(&data()?.versions.newest)
}
