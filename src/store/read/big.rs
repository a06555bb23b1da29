//! Blobs too big to hold: a blob stored whole in a pack and larger than `core.bigFileThreshold` is inflated in
//! pieces as it is written, as git cat-file streams such blobs (fast-import holds them whole). Its size is in
//! the entry header, so the answer's header goes out with the first piece; the compressed bytes are read with
//! `pread` through a handle of their own, so pages already written do not stay in the resident set the way pages
//! touched through the mapping would. Peak memory is two pieces, whatever the blob's size.
//!
//! A blob stored as a delta is still built in memory (its base must be whole to apply the delta); so is a loose
//! one (git writes big files straight into packs).
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use flate2::{Decompress, FlushDecompress, Status};
use gix_pack::data::entry::Header;

use super::resolve::damaged;
use crate::store::locate::Pack;
use crate::store::{Damage, Kind, Object, ObjectId, ReadError, Resolver, Store, oid};

/// Bytes inflated (and written) at a time, and bytes of compressed input read at a time.
const PIECE: usize = 1 << 20;

/// `core.bigFileThreshold` by default.
pub const DEFAULT_BIG_FILE_THRESHOLD: u64 = 512 << 20;

/// An object as an answer needs it.
pub enum Answer {
    Whole(Object),
    /// A blob to be written in pieces.
    Big(Arc<BigBlob>),
}

impl Answer {
    pub fn kind(&self) -> Kind {
        match self {
            Answer::Whole(object) => object.kind,
            Answer::Big(_) => Kind::Blob,
        }
    }
}

/// A blob stored whole in a pack, to be inflated in pieces.
pub struct BigBlob {
    id: ObjectId,
    pack: Arc<Pack>,
    /// The entry's offset (for errors), where its zlib data starts, and where the pack's entries end.
    offset: u64,
    data_start: u64,
    data_end: u64,
    size: u64,
    file: File,
}

impl std::fmt::Debug for BigBlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BigBlob({} at {} in {:?}, {} bytes)", self.id, self.offset, self.pack.pack_path, self.size)
    }
}

/// Why writing a big blob stopped: its pack is damaged, or the writer failed.
#[derive(Debug)]
pub enum PieceError<E> {
    Read(ReadError),
    Write(E),
}

/// What a read is for: an object to hold, or an answer to write (where a big blob is streamed).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(in crate::store) enum Want {
    Whole,
    Answer,
}

impl Store {
    /// Reads `id` (through replace refs unless `exact`) for an answer: whole, or, for a blob stored whole in a
    /// pack and larger than the big-file threshold, as a [`BigBlob`] to write in pieces.
    pub fn read_for_answer(&self, id: &oid, resolver: &mut Resolver, exact: bool) -> Result<Option<Answer>, ReadError> {
        if exact {
            return self.read_exact_as(id, resolver, Want::Answer);
        }
        let target = self.replacement(id)?;
        match self.read_exact_as(&target, resolver, Want::Answer)? {
            None if target != id => Err(crate::store::replace_error(id, Damage::ReplacementMissing(target))),
            found => Ok(found),
        }
    }

    /// Reads the entry at `offset` of `pack`: whole, or as a [`BigBlob`] if that is wanted and it is one.
    pub(in crate::store) fn read_packed_as(
        &self,
        id: &oid,
        pack: &Arc<Pack>,
        offset: u64,
        resolver: &mut Resolver,
        want: Want,
    ) -> Result<Answer, ReadError> {
        if want == Want::Answer
            && let Some(big) = self.big_blob(id, pack, offset)?
        {
            return Ok(Answer::Big(Arc::new(big)));
        }
        self.read_packed(id, pack, offset, resolver).map(Answer::Whole)
    }

    /// The entry at `offset` of `pack` as a [`BigBlob`] if it is one; `None` for anything else.
    fn big_blob(&self, id: &oid, pack: &Arc<Pack>, offset: u64) -> Result<Option<BigBlob>, ReadError> {
        let entry = pack.entry(offset).map_err(|damage| damaged(id, pack, offset, damage))?;
        if entry.header != Header::Blob || entry.decompressed_size <= self.options.big_file_threshold {
            return Ok(None);
        }
        let data_end = pack.data_end().map_err(|damage| damaged(id, pack, offset, damage))?;
        // A pack replaced under the same name is read through the mapping, whole.
        let Some(file) = pack.reopen() else { return Ok(None) };
        let (data_start, size) = (entry.data_offset, entry.decompressed_size);
        Ok(Some(BigBlob { id: id.to_owned(), pack: Arc::clone(pack), offset, data_start, data_end, size, file }))
    }
}

impl BigBlob {
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Inflates the blob and hands it to `write` in pieces of at most a MiB, the last one with `true`. The last
    /// piece is handed over only once the zlib stream is known to end right there, so damage anywhere is found
    /// before the answer is complete.
    pub fn write_in_pieces<E>(&self, mut write: impl FnMut(&[u8], bool) -> Result<(), E>) -> Result<(), PieceError<E>> {
        let fail = |damage| PieceError::Read(damaged(&self.id, &self.pack, self.offset, damage));
        let mut zlib = Decompress::new(true);
        let (mut input, mut output) = (vec![0u8; PIECE], vec![0u8; PIECE]);
        let (mut read_at, mut input_len, mut input_pos) = (self.data_start, 0usize, 0usize);
        // Bytes written so far, and bytes of the next piece inflated so far.
        let (mut written, mut filled) = (0u64, 0usize);
        loop {
            if input_pos == input_len {
                let want = (self.data_end - read_at).min(PIECE as u64) as usize;
                if want == 0 {
                    return Err(fail(Damage::Truncated));
                }
                self.file.read_exact_at(&mut input[..want], read_at).map_err(|err| fail(Damage::Io(Arc::new(err))))?;
                (read_at, input_len, input_pos) = (read_at + want as u64, want, 0);
            }
            let room = (self.size - written).min(PIECE as u64) as usize;
            let (before_in, before_out) = (zlib.total_in(), zlib.total_out());
            let status =
                zlib.decompress(&input[input_pos..input_len], &mut output[filled..room], FlushDecompress::None);
            let status = status.map_err(|_| fail(Damage::Zlib))?;
            let (took, gave) = ((zlib.total_in() - before_in) as usize, (zlib.total_out() - before_out) as usize);
            (input_pos, filled) = (input_pos + took, filled + gave);
            if took == 0 && gave == 0 && status != Status::StreamEnd && input_pos < input_len {
                return Err(fail(Damage::Zlib)); // no progress with input and room: not a zlib stream we can read
            }
            let complete = written + filled as u64 == self.size;
            if status == Status::StreamEnd && !complete {
                return Err(fail(Damage::SizeMismatch { declared: self.size, actual: Some(written + filled as u64) }));
            }
            if complete && status != Status::StreamEnd {
                self.check_end(&mut zlib, &input[input_pos..input_len], read_at).map_err(fail)?;
            }
            if filled == room || complete {
                write(&output[..filled], complete).map_err(PieceError::Write)?;
                (written, filled) = (written + filled as u64, 0);
                if complete {
                    return Ok(());
                }
            }
        }
    }

    /// After the declared size, the zlib stream must end without producing another byte.
    fn check_end(&self, zlib: &mut Decompress, buffered: &[u8], mut read_at: u64) -> Result<(), Damage> {
        let mut spare = [0u8; 1];
        let mut input = buffered.to_vec();
        loop {
            let before_in = zlib.total_in();
            let status = zlib.decompress(&input, &mut spare, FlushDecompress::None).map_err(|_| Damage::Zlib)?;
            if zlib.total_out() > self.size {
                return Err(Damage::SizeMismatch { declared: self.size, actual: None });
            }
            if status == Status::StreamEnd {
                return Ok(());
            }
            input.drain(..(zlib.total_in() - before_in) as usize);
            if input.is_empty() {
                let want = (self.data_end - read_at).min(64) as usize;
                if want == 0 {
                    return Err(Damage::Truncated);
                }
                input.resize(want, 0);
                self.file.read_exact_at(&mut input, read_at).map_err(|err| Damage::Io(Arc::new(err)))?;
                read_at += want as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreOptions;
    use crate::store::testpack::{Objects, Stored, noise, object_id};

    fn store_with_threshold(objects: &Objects, threshold: u64) -> Store {
        let options = StoreOptions { big_file_threshold: threshold, ..Default::default() };
        Store::open(objects.path(), gix_hash::Kind::Sha1, options)
    }

    /// Every piece as written, and whether it was flagged last.
    fn pieces(big: &BigBlob) -> Result<Vec<(Vec<u8>, bool)>, PieceError<()>> {
        let mut out = Vec::new();
        big.write_in_pieces(|piece, last| {
            out.push((piece.to_vec(), last));
            Ok::<(), ()>(())
        })?;
        Ok(out)
    }

    fn big(store: &Store, id: &ObjectId) -> Arc<BigBlob> {
        match store.read_for_answer(id, &mut Resolver::new(1 << 20), false).expect("readable").expect("present") {
            Answer::Big(big) => big,
            Answer::Whole(object) => panic!("read whole: {} bytes", object.data.len()),
        }
    }

    #[test]
    fn a_blob_over_the_threshold_is_inflated_in_pieces_of_a_mib() {
        let content = noise(7, (3 << 20) + 5);
        let id = object_id(Kind::Blob, &content);
        let small = b"small\n".to_vec();
        let objects = Objects::new();
        let small_id = object_id(Kind::Blob, &small);
        objects.add_pack(
            "big",
            &[(id, Stored::Whole(Kind::Blob, content.clone())), (small_id, Stored::Whole(Kind::Blob, small))],
        );
        let store = store_with_threshold(&objects, 1 << 20);
        let written = pieces(&big(&store, &id)).expect("intact");
        let sizes: Vec<(usize, bool)> = written.iter().map(|(piece, last)| (piece.len(), *last)).collect();
        assert_eq!(sizes, [(PIECE, false), (PIECE, false), (PIECE, false), (5, true)]);
        assert!(written.iter().flat_map(|(piece, _)| piece).copied().eq(content.iter().copied()));
        let answer =
            store.read_for_answer(&small_id, &mut Resolver::new(1 << 20), false).expect("ok").expect("present");
        assert!(matches!(answer, Answer::Whole(_)), "a small blob is read whole");
    }

    /// Damage is found before the last piece goes out: the answer is never completed with wrong bytes.
    #[test]
    fn damage_in_a_streamed_blob_is_an_error_before_the_last_piece() {
        let content = noise(9, 2 << 20);
        let id = object_id(Kind::Blob, &content);
        let objects = Objects::new();
        let (path, offsets) = objects.add_pack("big", &[(id, Stored::Whole(Kind::Blob, content.clone()))]);
        let intact = std::fs::read(&path).expect("pack");

        // A byte of the stored (incompressible) data: only the stream's checksum at its end tells.
        let mut flipped = intact.clone();
        let middle = offsets[0] as usize + (1 << 20);
        flipped[middle] ^= 0xff;
        std::fs::write(&path, &flipped).expect("write");
        let store = store_with_threshold(&objects, 1 << 20);
        match pieces(&big(&store, &id)) {
            Err(PieceError::Read(err)) => {
                assert_eq!(err.location, crate::store::Location::Pack { path: path.clone(), offset: offsets[0] })
            }
            Ok(written) => panic!("damage not found; last piece flagged: {:?}", written.last().map(|p| p.1)),
            Err(PieceError::Write(())) => unreachable!(),
        }
    }
}
