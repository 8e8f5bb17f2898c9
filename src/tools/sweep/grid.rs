//! The grid of a sweep: `--param NAME=VALUES`, their cartesian product, and the `{name}`
//! placeholders of the command.

use crate::error::{Error, Result};

/// One swept parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Its name, as in `{name}`.
    pub name: String,
    /// Its values, in order.
    pub values: Vec<String>,
}

fn number(s: &str, what: &str) -> Result<u64> {
    s.trim()
        .parse()
        .map_err(|_| Error::config(format!("{what}: {s:?} is not a whole number")))
}

/// One item of a value list: `8`, `fast`, `1..64` (powers of two times the start: 1, 2, 4, …,
/// 64), `0..100+25` (0, 25, 50, 75, 100).
fn expand(item: &str, ctx: &str, out: &mut Vec<String>) -> Result<()> {
    let Some((from, rest)) = item.split_once("..") else {
        if item.is_empty() {
            return Err(Error::config(format!("{ctx}: an empty value")));
        }
        out.push(item.to_string());
        return Ok(());
    };
    let from = number(from, ctx)?;
    let (to, step) = match rest.split_once('+') {
        Some((to, step)) => (number(to, ctx)?, Some(number(step, ctx)?)),
        None => (number(rest, ctx)?, None),
    };
    if from > to {
        return Err(Error::config(format!(
            "{ctx}: the range {item} runs backwards"
        )));
    }
    match step {
        Some(0) => return Err(Error::config(format!("{ctx}: a step of 0 in {item}"))),
        Some(s) => {
            let mut v = from;
            while v <= to {
                out.push(v.to_string());
                v = match v.checked_add(s) {
                    Some(n) => n,
                    None => break,
                };
            }
        }
        None => {
            if from == 0 {
                return Err(Error::config(format!(
                    "{ctx}: {item} doubles from 0; start at 1 or give a step (0..{to}+STEP)"
                )));
            }
            let mut v = from;
            while v <= to {
                out.push(v.to_string());
                v = match v.checked_mul(2) {
                    Some(n) => n,
                    None => break,
                };
            }
        }
    }
    Ok(())
}

impl Param {
    /// Parses `NAME=VALUES`: VALUES is a comma-separated list whose items are values or ranges
    /// (`1..64` doubles, `0..100+25` steps).
    pub fn parse(s: &str) -> Result<Param> {
        let (name, values) = s.split_once('=').ok_or_else(|| {
            Error::config(format!(
                "--param {s:?}: expected NAME=VALUES, e.g. size=32,64"
            ))
        })?;
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(Error::config(format!(
                "--param {s:?}: the name must be letters, digits, '_' or '-'"
            )));
        }
        let ctx = format!("--param {name}");
        let mut out = Vec::new();
        for item in values.split(',') {
            expand(item.trim(), &ctx, &mut out)?;
        }
        if out.iter().any(|v| v.contains('"')) {
            return Err(Error::config(format!("{ctx}: values cannot contain '\"'")));
        }
        Ok(Param {
            name: name.to_string(),
            values: out,
        })
    }
}

/// The cartesian product of the parameters' values, the first parameter outermost. With no
/// parameters, one point with no values.
pub fn points(params: &[Param]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = vec![Vec::new()];
    for p in params {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                p.values.iter().map(move |v| {
                    let mut x = prefix.clone();
                    x.push(v.clone());
                    x
                })
            })
            .collect();
    }
    out
}

/// The order of the runs: repetition r walks the points forward when r is even and backward
/// when it is odd, so that a drift over time does not line up with the grid.
pub fn schedule(points: usize, reps: usize) -> Vec<(usize, usize)> {
    (0..reps)
        .flat_map(|r| {
            let idx: Vec<usize> = if r % 2 == 0 {
                (0..points).collect()
            } else {
                (0..points).rev().collect()
            };
            idx.into_iter().map(move |p| (p, r))
        })
        .collect()
}

/// The `{name}` placeholders in `arg`.
fn placeholders(arg: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let name = &after[..close];
                if !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    out.push(name);
                }
                rest = &after[close + 1..];
            }
            None => break,
        }
    }
    out
}

/// Every parameter appears as `{name}` in the command, and every `{name}` is a parameter.
pub fn check_placeholders(command: &[String], params: &[Param]) -> Result<()> {
    let used: Vec<&str> = command.iter().flat_map(|a| placeholders(a)).collect();
    for p in params {
        if !used.contains(&p.name.as_str()) {
            return Err(Error::config(format!(
                "--param {0} is not used: put {{{0}}} in the command (e.g. --{0} {{{0}}})",
                p.name
            )));
        }
    }
    for u in used {
        if !params.iter().any(|p| p.name == u) {
            return Err(Error::config(format!(
                "the command has {{{u}}} but no --param {u}=VALUES"
            )));
        }
    }
    Ok(())
}

/// The command of one point: every `{name}` replaced by the point's value.
pub fn substitute(command: &[String], params: &[Param], values: &[String]) -> Vec<String> {
    command
        .iter()
        .map(|a| {
            let mut s = a.clone();
            for (p, v) in params.iter().zip(values) {
                s = s.replace(&format!("{{{}}}", p.name), v);
            }
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(s: &str) -> Vec<String> {
        Param::parse(s).unwrap().values
    }

    #[test]
    fn value_lists_and_ranges() {
        assert_eq!(values("size=1,2,4"), ["1", "2", "4"]);
        assert_eq!(
            values("postlist=1..64"),
            ["1", "2", "4", "8", "16", "32", "64"]
        );
        assert_eq!(values("p=3..20"), ["3", "6", "12"]);
        assert_eq!(values("u=0..100+25"), ["0", "25", "50", "75", "100"]);
        assert_eq!(values("u=1..10+4,32,fast"), ["1", "5", "9", "32", "fast"]);
        for bad in [
            "size", "=1", "s=", "s=0..8", "s=8..1", "s=1..8+0", "s=a..8", "s p=1",
        ] {
            assert!(Param::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn grid_is_the_cartesian_product_first_outermost() {
        let ps = [
            Param::parse("a=1,2").unwrap(),
            Param::parse("b=x,y,z").unwrap(),
        ];
        let g = points(&ps);
        assert_eq!(g.len(), 6);
        assert_eq!(g[0], ["1", "x"]);
        assert_eq!(g[1], ["1", "y"]);
        assert_eq!(g[5], ["2", "z"]);
        assert_eq!(points(&[]), vec![Vec::<String>::new()]);
        assert_eq!(
            schedule(3, 3),
            [
                (0, 0),
                (1, 0),
                (2, 0),
                (2, 1),
                (1, 1),
                (0, 1),
                (0, 2),
                (1, 2),
                (2, 2)
            ]
        );
    }

    #[test]
    fn placeholders_are_checked_both_ways() {
        let ps = [Param::parse("size=8").unwrap()];
        let cmd = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_placeholders(&cmd(&["b", "--size", "{size}"]), &ps).is_ok());
        assert!(check_placeholders(&cmd(&["b", "--size=x{size}y"]), &ps).is_ok());
        let e = check_placeholders(&cmd(&["b", "--size", "8"]), &ps).unwrap_err();
        assert!(e.to_string().contains("--param size is not used"), "{e}");
        let e = check_placeholders(&cmd(&["b", "{size}", "{postlist}"]), &ps).unwrap_err();
        assert!(e.to_string().contains("{postlist} but no --param"), "{e}");
        // Braces that are no placeholder (JSON, shell) pass.
        assert!(check_placeholders(&cmd(&["b", "{size}", "{\"a\": 1}", "{}"]), &ps).is_ok());
        assert_eq!(
            substitute(&cmd(&["b", "--size={size}", "{size}"]), &ps, &["64".into()]),
            ["b", "--size=64", "64"]
        );
    }
}
