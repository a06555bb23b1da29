//! Several deltas of a chain applied as one: each delta is checked as [`delta::apply_into`] checks it, but
//! instead of building its result, its instructions are rewritten to point into the first base (or at
//! literal bytes), so that only the last result is built.
//!
//! A tree read over a server-packed history applies about five deltas in a row, and every result but the last
//! was built only to be copied from (small-A's 10,000 `ls`: the copies were 14% of the instructions, the
//! intermediates most of them, a quarter of a megabyte per read of a large directory). A tree delta is a few
//! copies and a few inserted entries, so the composed list stays as short as the deltas.
//!
//! [`delta::apply_into`]: super::delta::apply_into
use super::delta::{DeltaError, copy_operands, read_size};

/// Where a run of the composed result comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The base the first delta applies to.
    Base,
    /// [`Composed::literals`].
    Literal,
}

/// A run of the composed result: `len` bytes from `at` in `source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    /// Where the run starts in the result.
    start: usize,
    source: Source,
    at: usize,
    len: usize,
}

/// The deltas pushed since the last [`Composed::clear`], as pieces of their first base and of their inserted
/// bytes. Kept by a resolver from one walk to the next, so that its buffers are reused.
#[derive(Debug, Default)]
pub(crate) struct Composed {
    /// The result of the deltas pushed so far, in order.
    pieces: Vec<Piece>,
    /// The buffer the next delta's pieces are built in.
    next: Vec<Piece>,
    /// Every delta's inserted bytes, appended: earlier pieces still point into them.
    literals: Vec<u8>,
    base_len: usize,
    /// The size of the result so far.
    size: usize,
    deltas: usize,
}

/// Pieces are 32 bytes: a list with more than one piece per this many result bytes is worth building instead.
const FRAGMENTED: usize = 16;

impl Composed {
    /// True when no delta is pushed.
    pub(crate) fn is_empty(&self) -> bool {
        self.deltas == 0
    }

    /// The bytes its buffers hold.
    pub(crate) fn capacity(&self) -> usize {
        self.literals.capacity() + (self.pieces.capacity() + self.next.capacity()) * std::mem::size_of::<Piece>()
    }

    /// Forgets the deltas pushed, keeping the buffers.
    pub(crate) fn clear(&mut self) {
        self.pieces.clear();
        self.literals.clear();
        self.deltas = 0;
    }

    /// True when the pieces take more room than the result would: a damaged or hostile chain whose deltas
    /// copy small runs of each other's results many times. The caller builds the result then.
    pub(crate) fn fragmented(&self) -> bool {
        self.pieces.len() > 64 && self.pieces.len() * FRAGMENTED > self.size
    }

    /// Adds `delta`, applied to the result so far or, for the first, to a base of `base_len` bytes. Refuses
    /// what [`super::delta::apply_into`] refuses, in the same order; on an error everything pushed is dropped.
    pub(crate) fn push(&mut self, base_len: usize, delta: &[u8], limit: u64) -> Result<(), DeltaError> {
        if self.deltas == 0 {
            self.start(base_len);
        }
        let mut next = std::mem::take(&mut self.next);
        next.clear();
        let pushed = self.compose_into(delta, limit, &mut next);
        match pushed {
            Ok(size) => {
                self.next = std::mem::replace(&mut self.pieces, next);
                self.size = size;
                self.deltas += 1;
            }
            Err(_) => {
                self.next = next;
                self.clear();
            }
        }
        pushed.map(|_| ())
    }

    /// Builds the result into `out` (cleared first) from `base`, the base the first delta was pushed for.
    pub(crate) fn apply(&self, base: &[u8], out: &mut Vec<u8>) -> Result<(), DeltaError> {
        if base.len() != self.base_len {
            return Err(DeltaError::BaseSizeMismatch { expected: self.base_len as u64, actual: base.len() });
        }
        out.clear();
        out.reserve_exact(self.size);
        for piece in &self.pieces {
            let from = match piece.source {
                Source::Base => &base[piece.at..piece.at + piece.len],
                Source::Literal => &self.literals[piece.at..piece.at + piece.len],
            };
            out.extend_from_slice(from);
        }
        Ok(())
    }

    fn start(&mut self, base_len: usize) {
        self.clear();
        if base_len > 0 {
            self.pieces.push(Piece { start: 0, source: Source::Base, at: 0, len: base_len });
        }
        (self.base_len, self.size) = (base_len, base_len);
    }

    /// The pieces of `delta`'s result into `next`; returns its size.
    fn compose_into(&mut self, delta: &[u8], limit: u64, next: &mut Vec<Piece>) -> Result<usize, DeltaError> {
        let mut pos = 0;
        let base_size = read_size(delta, &mut pos)?;
        if base_size != self.size as u64 {
            return Err(DeltaError::BaseSizeMismatch { expected: base_size, actual: self.size });
        }
        let size = read_size(delta, &mut pos)?;
        if size > limit {
            return Err(DeltaError::TooLarge { size, limit });
        }
        let instructions = &delta[pos..];
        let (mut pos, mut produced) = (0, 0u64);
        while let Some(&cmd) = instructions.get(pos) {
            pos += 1;
            let len = if cmd & 0x80 != 0 {
                let (offset, len) = copy_operands(cmd, instructions, &mut pos)?;
                let end = offset + len;
                if end > self.size as u64 {
                    return Err(DeltaError::CopyOutOfBounds { offset, end, base: self.size });
                }
                if len > size - produced {
                    return Err(DeltaError::Overflow { size });
                }
                self.copy(offset as usize, len as usize, produced as usize, next);
                len
            } else if cmd != 0 {
                let literal = instructions.get(pos..pos + usize::from(cmd)).ok_or(DeltaError::TruncatedCopy)?;
                pos += literal.len();
                if literal.len() as u64 > size - produced {
                    return Err(DeltaError::Overflow { size });
                }
                let piece =
                    Piece { start: produced as usize, source: Source::Literal, at: self.literals.len(), len: 0 };
                append(next, Piece { len: literal.len(), ..piece });
                self.literals.extend_from_slice(literal);
                literal.len() as u64
            } else {
                return Err(DeltaError::ReservedOpcode);
            };
            produced += len;
        }
        if produced != size {
            return Err(DeltaError::ShortResult { expected: size, actual: produced as usize });
        }
        Ok(size as usize)
    }

    /// Appends to `next` the pieces that make bytes `offset..offset + len` of the result so far, at `start`
    /// of the next result. The range is within the result so far.
    fn copy(&self, mut offset: usize, mut len: usize, mut start: usize, next: &mut Vec<Piece>) {
        // The first piece to start at or before `offset`, from the end: pieces start at 0, in order.
        let mut i = self.pieces.partition_point(|piece| piece.start <= offset) - 1;
        while len > 0 {
            let piece = self.pieces[i];
            let skip = offset - piece.start;
            let take = (piece.len - skip).min(len);
            append(next, Piece { start, source: piece.source, at: piece.at + skip, len: take });
            (offset, start, len, i) = (offset + take, start + take, len - take, i + 1);
        }
    }
}

/// Pushes `piece`, or lengthens the last piece when `piece` continues it in the same source.
fn append(pieces: &mut Vec<Piece>, piece: Piece) {
    if let Some(last) = pieces.last_mut()
        && last.source == piece.source
        && last.at + last.len == piece.at
    {
        last.len += piece.len;
        return;
    }
    pieces.push(piece);
}

#[cfg(test)]
mod tests {
    use super::super::delta::apply;
    use super::*;

    /// A delta from a base of `base` bytes to the result of `ops`: `Ok((offset, len))` copies, `Err(bytes)`
    /// inserts.
    fn delta(base: usize, ops: &[Result<(u32, u32), &[u8]>]) -> Vec<u8> {
        let size: usize = ops.iter().map(|op| op.map_or_else(|bytes| bytes.len(), |(_, len)| len as usize)).sum();
        let mut out = Vec::new();
        for mut n in [base, size] {
            while n >= 0x80 {
                out.push(0x80 | (n & 0x7f) as u8);
                n >>= 7;
            }
            out.push(n as u8);
        }
        for op in ops {
            match op {
                Ok((offset, len)) => {
                    out.push(0x80 | 0x0f | 0x30);
                    out.extend_from_slice(&offset.to_le_bytes());
                    out.extend_from_slice(&len.to_le_bytes()[..2]);
                }
                Err(bytes) => {
                    out.push(bytes.len() as u8);
                    out.extend_from_slice(bytes);
                }
            }
        }
        out
    }

    /// Applies `deltas` one by one and composed; both must agree, result or error.
    fn both(base: &[u8], deltas: &[Vec<u8>]) -> Result<Vec<u8>, DeltaError> {
        let mut one_by_one = Ok(base.to_vec());
        for d in deltas {
            one_by_one = one_by_one.and_then(|below| apply(&below, d, 1 << 20));
        }
        let mut composed = Composed::default();
        let mut result = deltas.iter().try_for_each(|d| composed.push(base.len(), d, 1 << 20)).map(|()| Vec::new());
        if let Ok(out) = &mut result {
            composed.apply(base, out)?;
        }
        assert_eq!(result, one_by_one);
        result
    }

    #[test]
    fn composed_deltas_build_what_applying_each_builds() {
        let base = b"0123456789abcdefghij";
        let first = delta(20, &[Ok((10, 10)), Err(b"--"), Ok((0, 10))]);
        let second = delta(22, &[Ok((5, 12)), Err(b"xyz"), Ok((0, 3)), Ok((21, 1))]);
        let third = delta(19, &[Ok((18, 1)), Ok((0, 18)), Err(b"!")]);
        assert_eq!(both(base, std::slice::from_ref(&first)).unwrap(), b"abcdefghij--0123456789");
        assert_eq!(both(base, &[first.clone(), second.clone()]).unwrap(), b"fghij--01234xyzabc9");
        assert_eq!(both(base, &[first, second, third]).unwrap(), b"9fghij--01234xyzabc!");
        assert_eq!(both(b"", &[delta(0, &[Err(b"new")]), delta(3, &[])]).unwrap(), b"");
    }

    #[test]
    fn damage_is_refused_as_applying_refuses_it() {
        let base = b"0123456789";
        let good = delta(10, &[Ok((0, 10)), Err(b"ab")]);
        assert!(matches!(both(base, &[good.clone(), delta(10, &[])]), Err(DeltaError::BaseSizeMismatch { .. })));
        let past_end = delta(12, &[Ok((5, 8))]);
        assert!(matches!(both(base, &[good.clone(), past_end]), Err(DeltaError::CopyOutOfBounds { .. })));
        let mut short = delta(12, &[Ok((0, 4))]);
        short[1] = 5;
        assert!(matches!(both(base, &[good.clone(), short]), Err(DeltaError::ShortResult { .. })));
        let mut long = delta(12, &[Ok((0, 4)), Err(b"xy")]);
        long[1] = 5;
        assert!(matches!(both(base, &[good.clone(), long]), Err(DeltaError::Overflow { .. })));
        assert_eq!(both(base, &[good.clone(), vec![12, 1, 0]]), Err(DeltaError::ReservedOpcode));
        assert_eq!(both(base, &[good.clone(), vec![12, 3, 5, b'a']]), Err(DeltaError::TruncatedCopy));
        let mut composed = Composed::default();
        assert!(matches!(composed.push(10, &good, 11), Err(DeltaError::TooLarge { .. })));
        assert!(composed.is_empty(), "an error drops what was pushed");
    }

    #[test]
    fn a_wrong_base_is_refused_and_neighbouring_runs_merge() {
        let mut composed = Composed::default();
        let d = delta(10, &[Ok((0, 4)), Ok((4, 6)), Err(b"a"), Err(b"b")]);
        composed.push(10, &d, 100).unwrap();
        assert_eq!(composed.pieces.len(), 2, "{:?}", composed.pieces);
        assert!(matches!(composed.apply(b"short", &mut Vec::new()), Err(DeltaError::BaseSizeMismatch { .. })));
        let mut out = Vec::new();
        composed.apply(b"0123456789", &mut out).unwrap();
        assert_eq!(out, b"0123456789ab");
        assert!(!composed.fragmented());
    }

    #[test]
    fn runs_of_single_bytes_are_fragmented() {
        let base = vec![7u8; 100];
        let ops: Vec<Result<(u32, u32), &[u8]>> = (0..100).map(|i| Ok(((i * 37) % 100, 1))).collect();
        let mut composed = Composed::default();
        composed.push(100, &delta(100, &ops), 1000).unwrap();
        assert!(composed.fragmented());
        let mut out = Vec::new();
        composed.apply(&base, &mut out).unwrap();
        assert_eq!(out, base);
    }
}
