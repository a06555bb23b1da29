//! Loose objects: `objects/xx/yyyy…`, a zlib stream of `<type> <size>\0<content>`.
//!
//! gix-object parses the header; inflating is streamed with flate2 because the size is only known once the
//! header is out.
use std::io;
use std::path::{Path, PathBuf};

use flate2::{Decompress, FlushDecompress, Status};
use gix_hash::oid;

use crate::store::decode::inflatable;
use crate::store::{Damage, Kind};

/// Where a loose object would be stored under `objects_dir`.
pub(in crate::store) fn path(objects_dir: &Path, id: &oid) -> PathBuf {
    let hex = id.to_hex().to_string();
    objects_dir.join(&hex[..2]).join(&hex[2..])
}

/// Reads the loose object at `path`: `Ok(None)` if there is no such file.
pub(in crate::store) fn read(path: &Path, limit: u64) -> Result<Option<(Kind, Vec<u8>)>, Damage> {
    let compressed = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Damage::Io(std::sync::Arc::new(err))),
    };
    decode(&compressed, limit).map(Some)
}

/// Decodes a whole loose object file. Anything but exactly one zlib stream holding a valid header and
/// exactly the announced number of bytes is damage (git 2.47 would print the wrong bytes; we refuse).
pub(in crate::store) fn decode(compressed: &[u8], limit: u64) -> Result<(Kind, Vec<u8>), Damage> {
    let mut zlib = Decompress::new(true);
    // The header is at most "<type> <20 digits>\0": 32 bytes is enough to see its NUL.
    let mut head = Vec::with_capacity(32);
    let status =
        zlib.decompress_vec(compressed, &mut head, FlushDecompress::None).map_err(|_| zlib_damage(compressed))?;
    let nul = memchr::memchr(0, &head).ok_or(Damage::LooseHeader)?;
    let (kind, size, header_len) = gix_object::decode::loose_header(&head[..=nul]).map_err(|_| Damage::LooseHeader)?;
    if size > limit {
        return Err(Damage::TooLarge { size, limit });
    }
    inflatable(size, compressed.len())?;
    let mut out = Vec::with_capacity(size as usize);
    out.extend_from_slice(&head[header_len..]);
    let mut status = status;
    while status != Status::StreamEnd {
        if out.len() as u64 > size {
            return Err(Damage::SizeMismatch { declared: size, actual: None });
        }
        let consumed = zlib.total_in() as usize;
        // One spare byte past the announced size lets an over-long stream show itself.
        out.reserve((size as usize + 1).saturating_sub(out.len()).max(1));
        let before = (zlib.total_in(), zlib.total_out());
        status = zlib
            .decompress_vec(&compressed[consumed..], &mut out, FlushDecompress::Finish)
            .map_err(|_| Damage::Zlib)?;
        if status != Status::StreamEnd && (zlib.total_in(), zlib.total_out()) == before {
            return Err(Damage::Zlib);
        }
    }
    if out.len() as u64 != size {
        return Err(Damage::SizeMismatch { declared: size, actual: Some(out.len() as u64) });
    }
    if zlib.total_in() as usize != compressed.len() {
        return Err(Damage::TrailingGarbage);
    }
    Ok((kind, out))
}

/// Why a loose object's zlib stream did not start to inflate: zlib's `Z_NEED_DICT` (a valid deflate header with
/// FDICT set, and its dictionary id) is named, as git's "inflate: needs dictionary" names it; anything else is
/// corrupt.
pub(in crate::store) fn zlib_damage(compressed: &[u8]) -> Damage {
    match compressed {
        [cmf, flg, _, _, _, _, ..]
            if (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
                && cmf & 0x0f == 8
                && cmf >> 4 <= 7
                && flg & 0x20 != 0 =>
        {
            Damage::ZlibDictionary
        }
        _ => Damage::Zlib,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compression, write::ZlibEncoder};
    use std::io::Write;

    fn deflate(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = ZlibEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn decodes_header_and_content() {
        let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let object = [&b"blob 200000\0"[..], &big].concat();
        assert_eq!(decode(&deflate(&object), u64::MAX).unwrap(), (Kind::Blob, big));
        assert_eq!(decode(&deflate(b"blob 0\0"), u64::MAX).unwrap(), (Kind::Blob, vec![]));
        assert_eq!(decode(&deflate(b"tree 0\0"), u64::MAX).unwrap().0, Kind::Tree);
    }

    #[test]
    fn damage_is_refused() {
        assert!(matches!(decode(&deflate(b"blob 6\0hello"), u64::MAX), Err(Damage::SizeMismatch { .. })));
        assert!(matches!(decode(&deflate(b"blob 4\0hello"), u64::MAX), Err(Damage::SizeMismatch { .. })));
        assert!(matches!(decode(&deflate(b"blub 5\0hello"), u64::MAX), Err(Damage::LooseHeader)));
        assert!(matches!(decode(&deflate(b"blob 5hello"), u64::MAX), Err(Damage::LooseHeader)));
        assert!(matches!(decode(&deflate(b"blob 5\0hello"), 4), Err(Damage::TooLarge { .. })));
        let mut trailing = deflate(b"blob 5\0hello");
        trailing.extend_from_slice(b"junk");
        assert!(matches!(decode(&trailing, u64::MAX), Err(Damage::TrailingGarbage)));
        // t1006's "object reading handles zlib dictionary": deflated with the dictionary "anything".
        assert!(matches!(decode(b"\x78\xbb\x0f\x4a\x03\x63", u64::MAX), Err(Damage::ZlibDictionary)));
        assert!(matches!(decode(b"\x78\x9c\x0f\x4a\x03\x63", u64::MAX), Err(Damage::Zlib)));
        let good = deflate(b"blob 5\0hello");
        assert!(decode(&good[..good.len() - 3], u64::MAX).is_err());
        assert!(decode(b"not zlib at all", u64::MAX).is_err());
    }
}
