//! The `kube-system/aws-auth` ConfigMap: `mapRoles` as the AWS IAM authenticator reads it.
//! Parsing is strict where the authenticator is (a YAML error drops every mapping, and with
//! it every node) and reports where the problem is, as a line of `mapRoles`.

use serde_json::Value;

/// The username every EC2 node mapping must use: the kubelet registers as
/// `system:node:<private DNS name>`, and the Node authorizer only lets it manage that Node.
pub const NODE_USERNAME: &str = "system:node:{{EC2PrivateDNSName}}";
/// The groups a node mapping needs: bootstrapping (CSR) and the node role.
pub const NODE_GROUPS: [&str; 2] = ["system:bootstrappers", "system:nodes"];
/// The extra group Windows nodes need for kube-proxy.
pub const WINDOWS_GROUP: &str = "eks:kube-proxy-windows";

/// One `mapRoles` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleMapping {
    pub rolearn: String,
    pub username: String,
    pub groups: Vec<String>,
    /// 1-based line of `mapRoles` where the entry's `rolearn` is.
    pub line: usize,
}

/// Why `mapRoles` cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapRolesError {
    pub message: String,
    /// 1-based line of `mapRoles`, when known.
    pub line: Option<usize>,
}

impl std::fmt::Display for MapRolesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "mapRoles line {l}: {}", self.message),
            None => write!(f, "mapRoles: {}", self.message),
        }
    }
}

/// Parses `mapRoles`. An absent or empty value is an empty list.
pub fn parse_map_roles(text: &str) -> Result<Vec<RoleMapping>, MapRolesError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    if let Some(i) = text.lines().position(|l| {
        let indent: String = l.chars().take_while(|c| c.is_whitespace()).collect();
        indent.contains('\t')
    }) {
        // YAML forbids tabs in indentation; name the line rather than the parser's column.
        return Err(MapRolesError {
            message: "a tab in the indentation (YAML allows spaces only)".to_string(),
            line: Some(i + 1),
        });
    }
    let value: Value = serde_norway::from_str(text).map_err(|e| MapRolesError {
        message: e.to_string(),
        // The YAML parser also breaks lines at a lone `\r`, which `str::lines` does not: keep
        // the line within the text as people's editors show it.
        line: e
            .location()
            .map(|l| l.line().min(text.lines().count().max(1))),
    })?;
    let Some(items) = value.as_array() else {
        return Err(MapRolesError {
            message: "is not a YAML list of mappings".to_string(),
            line: None,
        });
    };
    let mut out = Vec::new();
    let mut search_from = 0;
    for (i, item) in items.iter().enumerate() {
        let Some(map) = item.as_object() else {
            return Err(MapRolesError {
                message: format!("entry {} is not a mapping", i + 1),
                line: None,
            });
        };
        let field = |k: &str| -> Result<Option<&str>, MapRolesError> {
            match map.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(MapRolesError {
                    message: format!("entry {}: {k} is not a string ({other})", i + 1),
                    line: None,
                }),
            }
        };
        let rolearn = field("rolearn")?.unwrap_or_default().trim().to_string();
        let username = field("username")?.unwrap_or_default().to_string();
        let groups = match map.get("groups") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(g)) => g
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(MapRolesError {
                        message: format!("entry {}: a group is not a string ({other})", i + 1),
                        line: None,
                    }),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(MapRolesError {
                    message: format!("entry {}: groups is not a list ({other})", i + 1),
                    line: None,
                });
            }
        };
        let line = line_of(text, &rolearn, &mut search_from);
        out.push(RoleMapping {
            rolearn,
            username,
            groups,
            line,
        });
    }
    Ok(out)
}

/// The line of the next `rolearn` holding `arn`, searching on from the previous entry's.
fn line_of(text: &str, arn: &str, from: &mut usize) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let found = (*from..lines.len())
        .find(|&i| lines[i].contains("rolearn") && (arn.is_empty() || lines[i].contains(arn)));
    match found {
        Some(i) => {
            *from = i + 1;
            i + 1
        }
        None => 0,
    }
}

/// `mapRoles` of an aws-auth ConfigMap object (absent → empty text).
pub fn map_roles_text(cm: &k8s_openapi::api::core::v1::ConfigMap) -> &str {
    cm.data
        .as_ref()
        .and_then(|d| d.get("mapRoles"))
        .map(String::as_str)
        .unwrap_or_default()
}

/// What is wrong with a node role's mapping (empty when nothing is).
pub fn node_mapping_problems(m: &RoleMapping, windows: bool) -> Vec<String> {
    let mut out = Vec::new();
    if m.username != NODE_USERNAME {
        let shown = if m.username.is_empty() {
            "no username".to_string()
        } else {
            format!("username {}", m.username)
        };
        out.push(format!(
            "{shown} instead of {NODE_USERNAME} (the kubelet could not manage its own Node)"
        ));
    }
    let mut wanted: Vec<&str> = NODE_GROUPS.to_vec();
    if windows {
        wanted.push(WINDOWS_GROUP);
    }
    let missing: Vec<&str> = wanted
        .into_iter()
        .filter(|g| !m.groups.iter().any(|have| have == g))
        .collect();
    if !missing.is_empty() {
        out.push(format!("groups lack {}", missing.join(" and ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "- groups:\n  - system:bootstrappers\n  - system:nodes\n  rolearn: arn:aws:iam::111122223333:role/eks-system-nodes\n  username: system:node:{{EC2PrivateDNSName}}\n- rolearn: arn:aws:iam::111122223333:role/KarpenterNodeRole-demo\n  username: system:node:{{EC2PrivateDNSName}}\n  groups: [system:bootstrappers, system:nodes]\n";

    #[test]
    fn parses_entries_with_their_lines() {
        let m = parse_map_roles(GOOD).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].line, 4);
        assert_eq!(m[1].line, 6);
        assert!(node_mapping_problems(&m[1], false).is_empty());
        assert_eq!(node_mapping_problems(&m[1], true).len(), 1);
    }

    #[test]
    fn tabs_and_broken_yaml_name_the_line() {
        let tabs = "- rolearn: arn:aws:iam::1:role/a\n\tusername: x\n";
        assert_eq!(parse_map_roles(tabs).unwrap_err().line, Some(2));
        let broken = "- rolearn: arn:aws:iam::1:role/a\n  username: [unclosed\n";
        assert!(parse_map_roles(broken).unwrap_err().line.is_some());
    }

    #[test]
    fn lone_carriage_returns_do_not_push_the_line_past_the_text() {
        // Found by the property test: YAML counts `\r` as a line break.
        let e = parse_map_roles("'\r\r").unwrap_err();
        assert_eq!(e.line, Some(1));
    }

    #[test]
    fn wrong_types_are_errors_not_empty_mappings() {
        assert!(parse_map_roles("rolearn: x\n").is_err());
        assert!(parse_map_roles("- rolearn: [a]\n").is_err());
        assert!(parse_map_roles("- rolearn: a\n  groups: system:nodes\n").is_err());
        assert!(parse_map_roles("- 42\n").is_err());
        assert_eq!(parse_map_roles("  \n").unwrap(), []);
    }

    #[test]
    fn flags_session_name_usernames_and_missing_groups() {
        let m = &parse_map_roles(
            "- rolearn: arn:aws:iam::1:role/n\n  username: system:node:{{SessionName}}\n",
        )
        .unwrap()[0];
        let p = node_mapping_problems(m, false);
        assert_eq!(p.len(), 2, "{p:?}");
    }
}
