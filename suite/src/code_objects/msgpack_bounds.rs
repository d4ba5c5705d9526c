//! A check of a msgpack document's declared lengths against the bytes that hold it, before it is decoded.
//!
//! A code object's metadata note is msgpack, which declares every array, map, string and binary length up front. A
//! decoder that trusts them allocates for what is declared: a few kilobytes of crafted note (arrays declaring 2^32
//! elements, nested a thousand deep) ask for gigabytes. So before decoding, [`check`] walks the document without
//! allocating and refuses it when any declared length exceeds the bytes left (every element takes at least one
//! byte), or when it nests deeper than any real metadata does. A document that passes cannot make the decoder hold
//! more elements than it has bytes.

/// Deepest nesting accepted: real AMDGPU metadata nests four or five levels (a map of kernels, each a map, with
/// lists of argument maps).
pub const MAX_DEPTH: usize = 32;

/// `Ok` when every length `bytes` declares fits in the bytes that follow it and it nests at most [`MAX_DEPTH`]
/// deep; otherwise what is wrong, with its byte offset.
pub fn check(bytes: &[u8]) -> Result<(), String> {
    let mut at = 0usize;
    // Items still to read in each open container, innermost last; the document itself is one item.
    let mut open: Vec<u64> = vec![1];
    let take = |at: &mut usize, n: usize| -> Result<u64, String> {
        let field = bytes.get(*at..*at + n).ok_or_else(|| format!("msgpack cut short at byte {at}"))?;
        *at += n;
        Ok(field.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b)))
    };
    while let Some(left) = open.last_mut() {
        if *left == 0 {
            open.pop();
            continue;
        }
        *left -= 1;
        let start = at;
        let marker = take(&mut at, 1)? as u8;
        // (bytes of a length field, or a fixed payload size) and whether it opens a container of that many items.
        let (payload, items): (u64, u64) = match marker {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
            0x80..=0x8f => (0, 2 * u64::from(marker & 0x0f)),
            0x90..=0x9f => (0, u64::from(marker & 0x0f)),
            0xa0..=0xbf => (u64::from(marker & 0x1f), 0),
            0xc4 | 0xd9 => (take(&mut at, 1)?, 0),
            0xc5 | 0xda => (take(&mut at, 2)?, 0),
            0xc6 | 0xdb => (take(&mut at, 4)?, 0),
            0xc7 => (take(&mut at, 1)? + 1, 0),
            0xc8 => (take(&mut at, 2)? + 1, 0),
            0xc9 => (take(&mut at, 4)? + 1, 0),
            0xca | 0xce | 0xd2 => (4, 0),
            0xcb | 0xcf | 0xd3 => (8, 0),
            0xcc | 0xd0 => (1, 0),
            0xcd | 0xd1 => (2, 0),
            0xd4 => (2, 0),
            0xd5 => (3, 0),
            0xd6 => (5, 0),
            0xd7 => (9, 0),
            0xd8 => (17, 0),
            0xdc => (0, take(&mut at, 2)?),
            0xdd => (0, take(&mut at, 4)?),
            0xde => (0, 2 * take(&mut at, 2)?),
            0xdf => (0, 2 * take(&mut at, 4)?),
            0xc1 => return Err(format!("msgpack marker 0xc1 (never used) at byte {start}")),
        };
        let rest = (bytes.len() - at) as u64;
        if payload > rest || items > rest {
            return Err(format!(
                "msgpack at byte {start} declares {} but only {rest} bytes follow",
                if items > 0 { format!("{items} items") } else { format!("{payload} bytes") }
            ));
        }
        at += payload as usize;
        if items > 0 {
            if open.len() > MAX_DEPTH {
                return Err(format!("msgpack nests deeper than {MAX_DEPTH} levels at byte {start}"));
            }
            open.push(items);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_lengths_are_bounded_by_the_bytes_present() {
        let ok: &[&[u8]] = &[
            &[0x80],                         // {}
            &[0x81, 0xa1, b'a', 0x01],       // {"a": 1}
            &[0x92, 0xcd, 0x01, 0x00, 0xc3], // [256, true]
            &[0xdc, 0x00, 0x02, 0x01, 0x02], // array16 of 2
            &[0xd9, 0x03, b'a', b'b', b'c'], // str8 "abc"
            &[0xd6, 0x01, 0, 0, 0, 0],       // fixext4
        ];
        for doc in ok {
            assert_eq!(check(doc), Ok(()), "{doc:x?}");
        }
        let bad: &[(&[u8], &str)] = &[
            (&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x01], "declares 4294967295 items but only 1 bytes follow"),
            (&[0xdf, 0x00, 0x00, 0x10, 0x00, 0x01], "declares 8192 items"),
            (&[0xdb, 0x7f, 0xff, 0xff, 0xff], "declares 2147483647 bytes"),
            (&[0xc6, 0x00, 0x00, 0x00, 0x09, 1, 2], "declares 9 bytes but only 2 bytes follow"),
            (&[0x92, 0x01], "declares 2 items but only 1 bytes follow"),
            (&[0x92, 0x01, 0xdd, 0x00], "msgpack cut short at byte 3"),
            (&[0xc1], "0xc1"),
        ];
        for (doc, want) in bad {
            let e = check(doc).unwrap_err();
            assert!(e.contains(want), "{doc:x?}: {e}");
        }
        let deep: Vec<u8> = std::iter::repeat_n(0x91u8, MAX_DEPTH + 2).chain([0x01]).collect();
        assert!(check(&deep).unwrap_err().contains("deeper than 32"));
    }
}
