//! Sizes and counts as users type them on the command line.

/// Parses a size or count as the README writes them: digits with an optional suffix, `K` `M`
/// `G` (10^3, 10^6, 10^9) or `Ki` `Mi` `Gi` (2^10, 2^20, 2^30), each with or without a trailing
/// `B` (`1GiB`, `8Mi`, `16MiB`, `64K`), and within `T`'s range.
pub fn count<T: TryFrom<u64>>(s: &str) -> std::result::Result<T, String> {
    let t = s.trim();
    let t = t.strip_suffix(['B', 'b']).unwrap_or(t);
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    let mult: u64 = match suffix {
        "" => 1,
        "K" | "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "Ki" | "ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        _ => {
            return Err(format!(
                "'{s}' is not a whole number with an optional K, M, G (10^3, 10^6, 10^9) or Ki, \
                 Mi, Gi (2^10, 2^20, 2^30) suffix, B optional"
            ))
        }
    };
    if digits.is_empty() {
        return Err(format!("'{s}' has no digits"));
    }
    let n = digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("'{s}' is too large"))?;
    T::try_from(n).map_err(|_| format!("'{s}' ({n}) is out of range"))
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn sizes_and_counts_take_decimal_and_binary_suffixes() {
        assert_eq!(count::<u64>("4096"), Ok(4096));
        assert_eq!(count::<usize>("1GiB"), Ok(1 << 30));
        assert_eq!(count::<usize>("1Gi"), Ok(1 << 30));
        assert_eq!(count::<u64>("8Mi"), Ok(8 << 20));
        assert_eq!(count::<usize>("16MiB"), Ok(16 << 20));
        assert_eq!(count::<u32>("64K"), Ok(64_000));
        assert_eq!(count::<u32>("64KiB"), Ok(65_536));
        assert_eq!(count::<u64>("2MB"), Ok(2_000_000));
        assert_eq!(count::<u64>("3G"), Ok(3_000_000_000));
        assert_eq!(count::<u64>("32B"), Ok(32));
        assert!(count::<u32>("8Gi").unwrap_err().contains("out of range"));
        assert!(count::<u64>("1x").unwrap_err().contains("suffix"));
        assert!(count::<u64>("Mi").unwrap_err().contains("no digits"));
        assert!(count::<u64>("-1").is_err());
        assert!(count::<u64>("99999999999999999999")
            .unwrap_err()
            .contains("too large"));
    }
}
