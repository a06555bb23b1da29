//! Blobs defined in the stream by `blob` commands: readable by id and by mark for the rest of the stream, as
//! they are from git's in-progress pack.
//!
//! Bodies stay in memory up to a byte budget; past it they go to an anonymous temporary file, so a stream of
//! many gigabytes of blobs runs in bounded memory. A spilled blob is read back as a read-only mapping of its
//! stretch of that file, never copied whole. How many blobs a stream may define, and how many bytes it may
//! spill, are capped ([`StreamBlobLimits`]).
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::quota::{Exceeded, Held, Limit};
use crate::store::{Data, ObjectId};

#[derive(Debug, thiserror::Error)]
pub(crate) enum StreamBlobError {
    #[error("cannot write a blob from the stream to a temporary file: {0}")]
    Spill(#[source] io::Error),
    #[error("cannot read back a blob from the stream's temporary file: {0}")]
    ReadBack(#[source] io::Error),
    #[error("cannot hash a blob from the stream: {0}")]
    Hash(String),
    #[error("too many blobs: a stream may define at most {0} (--max-stream-blobs)")]
    TooMany(u64),
    #[error("too many blobs: the cat-blobd daemon holds {0} blobs for all its streams (--max-stream-blobs-total)")]
    TooManyInAll(u64),
    #[error("too many blob bytes: a stream may spill at most {0} bytes of blobs to disk (--max-spill-bytes)")]
    SpillTooLarge(u64),
    #[error(
        "too many blob bytes: the cat-blobd daemon holds {0} spilled bytes of blobs for all its streams \
         (--max-spill-bytes-total)"
    )]
    SpillTooLargeInAll(u64),
}

/// How many distinct blobs a stream may define (each costs about 100 bytes of index, in memory or not), and how
/// many bytes of them it may spill to its temporary file.
#[derive(Debug, Clone, Default)]
pub struct StreamBlobLimits {
    pub count: Limit,
    pub spill_bytes: Limit,
}

enum Stored {
    Memory(Data),
    Spilled { offset: u64, len: u64 },
}

pub(crate) struct StreamBlobs {
    blobs: HashMap<ObjectId, Stored>,
    memory_budget: usize,
    memory_used: usize,
    /// Written only at `spill_len` and past it, and cut back only to the start of a body that was not stored:
    /// the stretch of a stored blob never changes (what mapping it relies on).
    spill: Option<File>,
    spill_len: u64,
    /// One per blob in `blobs`.
    count: Held,
    /// `spill_len`.
    spilled: Held,
}

/// One body being received, in memory or in the spill file. A counted body is hashed as it arrives (its
/// header is known up front); a delimited one is hashed when it ends.
pub(crate) struct BodyWriter<'a> {
    blobs: &'a mut StreamBlobs,
    hash: gix_hash::Kind,
    /// Fed `blob <len>\0` and every piece, when the length was announced.
    hasher: Option<(gix_hash::Hasher, u64)>,
    memory: Vec<u8>,
    spilled_from: Option<u64>,
    len: u64,
}

/// `blob <len>\0`, the header git hashes before a blob's content.
fn blob_header(len: u64) -> Vec<u8> {
    let mut header = b"blob ".to_vec();
    header.extend_from_slice(itoa::Buffer::new().format(len).as_bytes());
    header.push(0);
    header
}

impl StreamBlobs {
    pub(crate) fn new(memory_budget: usize, limits: StreamBlobLimits) -> Self {
        StreamBlobs {
            blobs: HashMap::new(),
            memory_budget,
            memory_used: 0,
            spill: None,
            spill_len: 0,
            count: Held::new(limits.count),
            spilled: Held::new(limits.spill_bytes),
        }
    }

    /// Starts a blob of `declared_len` bytes (a hint: delimited bodies do not know theirs).
    pub(crate) fn begin(
        &mut self,
        hash: gix_hash::Kind,
        declared_len: Option<u64>,
    ) -> Result<BodyWriter<'_>, StreamBlobError> {
        let hasher = declared_len.map(|len| {
            let mut hasher = gix_hash::hasher(hash);
            hasher.update(&blob_header(len));
            (hasher, len)
        });
        let mut writer = BodyWriter { blobs: self, hash, hasher, memory: Vec::new(), spilled_from: None, len: 0 };
        match declared_len {
            Some(len) if !writer.fits(len) => writer.start_spill()?,
            // A stream may announce more than it sends: grow with what arrives, not with what was announced.
            _ => {}
        }
        Ok(writer)
    }

    /// The content of a blob the stream defined, if any.
    pub(crate) fn get(&self, id: &ObjectId) -> Result<Option<Data>, StreamBlobError> {
        match self.blobs.get(id) {
            None => Ok(None),
            Some(Stored::Memory(data)) => Ok(Some(data.clone())),
            Some(Stored::Spilled { offset, len }) => self.map(*offset, *len).map(Some),
        }
    }

    /// The stretch of the spill file that holds a stored blob, mapped read-only.
    #[allow(unsafe_code)]
    fn map(&self, offset: u64, len: u64) -> Result<Data, StreamBlobError> {
        if len == 0 {
            // mmap refuses an empty mapping.
            return Ok(Data::default());
        }
        let len = usize::try_from(len).map_err(|_| StreamBlobError::ReadBack(io::ErrorKind::OutOfMemory.into()))?;
        let file = self.spill.as_ref().expect("a spilled blob has a spill file");
        // SAFETY: a mapping is sound while nothing changes or cuts off the bytes it covers. This file is the
        // process's own anonymous temporary (`tempfile::tempfile`: O_TMPFILE, or unlinked at once, and
        // close-on-exec so no child inherits it): no other process can open it but through /proc/<pid>/fd, which
        // takes the rights to write this process's memory anyway. In this process only `StreamBlobs` writes it:
        // at `spill_len` and past it, and `set_len` only cuts it back to the start of a body that was not
        // stored. A stored blob's stretch, [offset, offset + len), lies below `spill_len` from the moment it is
        // stored and `spill_len` never goes below its end again, so these bytes never change while mapped. The
        // mapping outlives the file handle safely (it holds its own reference to the file).
        let map = unsafe { memmap2::MmapOptions::new().offset(offset).len(len).map(file) };
        Ok(Data::mapped(map.map_err(StreamBlobError::ReadBack)?))
    }

    pub(crate) fn contains(&self, id: &ObjectId) -> bool {
        self.blobs.contains_key(id)
    }

    /// The ids of every blob the stream defined, in no order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = &ObjectId> {
        self.blobs.keys()
    }

    /// Appends to the spill file, within the caps.
    fn append(&mut self, bytes: &[u8]) -> Result<(), StreamBlobError> {
        self.spilled.take(bytes.len() as u64).map_err(|exceeded| match exceeded {
            Exceeded::PerStream(most) => StreamBlobError::SpillTooLarge(most),
            Exceeded::Shared(most) => StreamBlobError::SpillTooLargeInAll(most),
        })?;
        let offset = self.spill_len;
        let file = self.spill_file()?;
        file.write_all_at(bytes, offset).map_err(StreamBlobError::Spill)?;
        self.spill_len += bytes.len() as u64;
        Ok(())
    }

    fn spill_file(&mut self) -> Result<&mut File, StreamBlobError> {
        if self.spill.is_none() {
            self.spill = Some(tempfile::tempfile().map_err(StreamBlobError::Spill)?);
        }
        Ok(self.spill.as_mut().expect("just created"))
    }
}

impl BodyWriter<'_> {
    fn fits(&self, additional: u64) -> bool {
        (self.blobs.memory_used as u64).saturating_add(self.memory.len() as u64).saturating_add(additional)
            <= self.blobs.memory_budget as u64
    }

    fn start_spill(&mut self) -> Result<(), StreamBlobError> {
        let pending = std::mem::take(&mut self.memory);
        self.spilled_from = Some(self.blobs.spill_len);
        self.blobs.append(&pending)
    }

    /// Appends a piece of the body.
    pub(crate) fn write(&mut self, piece: &[u8]) -> Result<(), StreamBlobError> {
        if let Some((hasher, _)) = &mut self.hasher {
            hasher.update(piece);
        }
        self.len += piece.len() as u64;
        if self.spilled_from.is_none() && !self.fits(piece.len() as u64) {
            self.start_spill()?;
        }
        if self.spilled_from.is_some() {
            self.blobs.append(piece)?;
        } else {
            self.memory.extend_from_slice(piece);
        }
        Ok(())
    }

    /// Stores the blob and returns its id: the hash of `blob <len>\0<body>` in the repository's hash.
    pub(crate) fn finish(mut self) -> Result<ObjectId, StreamBlobError> {
        let id = match self.hasher.take() {
            Some((hasher, declared)) if declared == self.len => hasher.try_finalize(),
            _ => self.hash_after_the_fact()?,
        }
        .map_err(|err| StreamBlobError::Hash(err.to_string()))?;
        if self.blobs.blobs.contains_key(&id) {
            // The same id is the same bytes: keep the copy already stored and give back what this one took. The
            // body is the last thing in the spill file, so cutting the file there frees it.
            if let Some(offset) = self.spilled_from {
                let file = self.blobs.spill_file()?;
                file.set_len(offset).map_err(StreamBlobError::Spill)?;
                self.blobs.spilled.give_back(self.blobs.spill_len - offset);
                self.blobs.spill_len = offset;
            }
            return Ok(id);
        }
        self.blobs.count.take(1).map_err(|exceeded| match exceeded {
            Exceeded::PerStream(most) => StreamBlobError::TooMany(most),
            Exceeded::Shared(most) => StreamBlobError::TooManyInAll(most),
        })?;
        let stored = match self.spilled_from {
            Some(offset) => Stored::Spilled { offset, len: self.len },
            None => {
                self.blobs.memory_used += self.memory.len();
                Stored::Memory(Data::new(std::mem::take(&mut self.memory)))
            }
        };
        self.blobs.blobs.insert(id, stored);
        Ok(id)
    }

    /// Hashes a body whose length was not known when it started (a delimited body).
    fn hash_after_the_fact(&self) -> Result<Result<ObjectId, gix_error::Error>, StreamBlobError> {
        let mut hasher = gix_hash::hasher(self.hash);
        hasher.update(&blob_header(self.len));
        match self.spilled_from {
            None => hasher.update(&self.memory),
            Some(offset) => {
                let file = self.blobs.spill.as_ref().expect("a spilled body has a spill file");
                let mut chunk = vec![0u8; 1 << 20];
                let mut done = 0;
                while done < self.len {
                    let n = chunk.len().min((self.len - done) as usize);
                    file.read_exact_at(&mut chunk[..n], offset + done).map_err(StreamBlobError::ReadBack)?;
                    hasher.update(&chunk[..n]);
                    done += n as u64;
                }
            }
        }
        Ok(hasher.try_finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(blobs: &mut StreamBlobs, body: &[u8], announce: bool, piece: usize) -> ObjectId {
        let declared = announce.then_some(body.len() as u64);
        let mut writer = blobs.begin(gix_hash::Kind::Sha1, declared).unwrap();
        for chunk in body.chunks(piece.max(1)) {
            writer.write(chunk).unwrap();
        }
        writer.finish().unwrap()
    }

    #[test]
    fn ids_are_gits_whether_counted_or_delimited_in_memory_or_spilled() {
        let hello = ObjectId::from_hex(b"ce013625030ba8dba906f756967f9e9ca394464a").unwrap();
        let empty = ObjectId::from_hex(b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391").unwrap();
        for budget in [0, 3, 1 << 20] {
            for announce in [true, false] {
                let mut blobs = StreamBlobs::new(budget, StreamBlobLimits::default());
                assert_eq!(store(&mut blobs, b"hello\n", announce, 2), hello);
                assert_eq!(store(&mut blobs, b"", announce, 1), empty);
                assert_eq!(blobs.get(&hello).unwrap().unwrap().as_slice(), b"hello\n");
                assert_eq!(blobs.get(&empty).unwrap().unwrap().as_slice(), b"");
            }
        }
    }

    #[test]
    fn a_blob_defined_again_takes_no_more_room() {
        for budget in [0, 1 << 20] {
            let mut blobs = StreamBlobs::new(budget, StreamBlobLimits::default());
            let id = store(&mut blobs, b"the same bytes", true, 4);
            let (spilled, memory) = (blobs.spill_len, blobs.memory_used);
            for announce in [true, false] {
                assert_eq!(store(&mut blobs, b"the same bytes", announce, 3), id);
                assert_eq!((blobs.spill_len, blobs.memory_used), (spilled, memory), "budget {budget}");
            }
            let other = store(&mut blobs, b"other", true, 5);
            assert_eq!(blobs.get(&id).unwrap().unwrap().as_slice(), b"the same bytes");
            assert_eq!(blobs.get(&other).unwrap().unwrap().as_slice(), b"other");
        }
    }

    #[test]
    fn memory_stays_within_the_budget() {
        let mut blobs = StreamBlobs::new(100, StreamBlobLimits::default());
        let big: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        for i in 0..20u8 {
            let mut body = big.clone();
            body[0] = i;
            let id = store(&mut blobs, &body, i % 2 == 0, 64);
            assert_eq!(blobs.get(&id).unwrap().unwrap().as_slice(), body.as_slice());
            assert!(blobs.memory_used <= 100);
        }
        assert_eq!(blobs.blobs.len(), 20);
    }

    #[test]
    fn blobs_past_a_streams_cap_or_the_shared_cap_are_refused() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicU64, Ordering};
        let shared = Arc::new(AtomicU64::new(0));
        let count = Limit { per_stream: Some(2), shared: Some((Arc::clone(&shared), 3)) };
        let limits = StreamBlobLimits { count, spill_bytes: Limit::default() };
        let mut first = StreamBlobs::new(1 << 20, limits.clone());
        store(&mut first, b"one", true, 3);
        store(&mut first, b"two", false, 3);
        store(&mut first, b"two", true, 3);
        let mut writer = first.begin(gix_hash::Kind::Sha1, None).unwrap();
        writer.write(b"three").unwrap();
        assert_eq!(writer.finish().unwrap_err().to_string(), StreamBlobError::TooMany(2).to_string());
        let mut second = StreamBlobs::new(0, limits);
        store(&mut second, b"one", true, 3);
        let mut writer = second.begin(gix_hash::Kind::Sha1, Some(3)).unwrap();
        writer.write(b"two").unwrap();
        assert!(matches!(writer.finish(), Err(StreamBlobError::TooManyInAll(3))));
        drop(first);
        assert_eq!(shared.load(Ordering::Relaxed), 1, "a stream's blobs are given back when it ends");
    }

    #[test]
    fn spilled_bytes_past_a_streams_cap_or_the_shared_cap_are_refused() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicU64, Ordering};
        let shared = Arc::new(AtomicU64::new(0));
        let spill_bytes = Limit { per_stream: Some(16), shared: Some((Arc::clone(&shared), 24)) };
        let limits = StreamBlobLimits { count: Limit::default(), spill_bytes };
        let mut first = StreamBlobs::new(0, limits.clone());
        store(&mut first, b"0123456", true, 3);
        // Defined again, it takes room while it arrives, and gives it back once it is known to be the same.
        store(&mut first, b"0123456", false, 2);
        assert_eq!(shared.load(Ordering::Relaxed), 7);
        let mut writer = first.begin(gix_hash::Kind::Sha1, None).unwrap();
        writer.write(b"abcdefghi").unwrap();
        assert_eq!(writer.write(b"j").unwrap_err().to_string(), StreamBlobError::SpillTooLarge(16).to_string());
        drop(writer);
        let mut second = StreamBlobs::new(0, limits);
        let mut writer = second.begin(gix_hash::Kind::Sha1, Some(9)).unwrap();
        writer.write(b"abcdefgh").unwrap();
        assert!(matches!(writer.write(b"i"), Err(StreamBlobError::SpillTooLargeInAll(24))));
        drop(writer);
        drop(first);
        assert_eq!(shared.load(Ordering::Relaxed), 8, "a stream's bytes are given back when it ends");
    }

    #[test]
    fn a_spilled_blob_is_served_from_a_mapping_of_its_own_bytes() {
        let mut blobs = StreamBlobs::new(0, StreamBlobLimits::default());
        let bodies: Vec<Vec<u8>> = (0..5u8).map(|i| vec![b'a' + i; 5000 + usize::from(i)]).collect();
        let ids: Vec<_> = bodies.iter().map(|body| store(&mut blobs, body, true, 777)).collect();
        // A blob defined again is cut off the file's end, and what follows overwrites that stretch.
        store(&mut blobs, &bodies[4], false, 100);
        let last = store(&mut blobs, b"after", true, 5);
        for (id, body) in ids.iter().zip(&bodies) {
            let data = blobs.get(id).unwrap().unwrap();
            assert!(data.is_mapped(), "read back without copying");
            assert_eq!(data.as_slice(), body.as_slice());
        }
        assert_eq!(blobs.get(&last).unwrap().unwrap().as_slice(), b"after");
        let empty = store(&mut blobs, b"", true, 1);
        assert_eq!(blobs.get(&empty).unwrap().unwrap().as_slice(), b"");
    }
}
