//! The first bytes of a zlib stream (a delta's header, a loose object's header) without building zlib's
//! decoding tables.
//!
//! Why hand-rolled: gix-zlib (zlib-rs) and flate2 expose no cheap prefix decode. zlib builds full lookup
//! tables (`inflate_table`) for every dynamic Huffman block before it can emit its first byte, and resets a
//! large state per stream: for the 20 bytes `cat-file --batch-check` needs of each delta, that was a fifth of
//! its samples on git.git. This decoder is zlib's `contrib/puff` way: canonical Huffman codes decoded from
//! their `count`/`symbol` arrays, a few hundred steps for a table instead of thousands of entries.
//!
//! It only ever answers what zlib would, or nothing: [`inflate_head`] asks zlib whenever [`decode`] cannot
//! vouch for the result (a preset dictionary, any damage, input that ends early), so the bytes, and whether
//! there is an error, are exactly zlib's for every input. To be exact it also reads on where zlib
//! reads on: once `max` bytes are out, zlib still decodes the next codes until one would write (a block end,
//! the next block's header, the final checksum) and fails on damage it finds there; [`decode`] does the same.
use std::cell::RefCell;
use std::sync::LazyLock;

use crate::store::Damage;

/// The first `max` bytes (fewer if the stream ends first) of the zlib stream at the start of `input`, as
/// gix-zlib's `Inflate::prefix` gives them into a `max`-byte buffer (git's delta-header read does the same).
pub(in crate::store) fn inflate_head(input: &[u8], max: usize) -> Result<Vec<u8>, Damage> {
    match decode(input, max) {
        Some(head) => Ok(head),
        None => zlib_head(input, max),
    }
}

/// zlib's answer: it stops when `max` bytes are out. One inflater per thread, reset for each stream.
fn zlib_head(input: &[u8], max: usize) -> Result<Vec<u8>, Damage> {
    thread_local! {
        static INFLATE: RefCell<gix_zlib::Inflate> = RefCell::default();
    }
    let mut out = vec![0; max];
    let inflated = INFLATE.with_borrow_mut(|inflate| {
        inflate.reset();
        inflate.prefix(input, &mut out)
    });
    match inflated {
        // Out of input before `max` bytes: what came is the head, if anything came.
        Ok((status, _, written)) if written > 0 || status == gix_zlib::Status::StreamEnd => {
            out.truncate(written);
            Ok(out)
        }
        _ => Err(Damage::Zlib),
    }
}

/// For tests and the fuzz target: whether [`decode`] answered (`false`: it left `input` to zlib). Panics
/// when its answer is not zlib's.
pub(in crate::store) fn check_against_zlib(input: &[u8], max: usize) -> bool {
    let Some(ours) = decode(input, max) else { return false };
    match zlib_head(input, max) {
        Ok(zlib) => assert!(ours == zlib, "max {max}: decoded {ours:?}, zlib gives {zlib:?}"),
        Err(_) => panic!("max {max}: decoded {ours:?}, zlib gives an error"),
    }
    true
}

/// What ended a block's decoding.
enum Stop {
    /// `max` bytes are out and the next code would write: zlib stops here too.
    Full,
    /// The block ended; the next block's header follows.
    BlockEnd,
}

/// The head as zlib gives it, or `None` to let zlib answer.
fn decode(input: &[u8], max: usize) -> Option<Vec<u8>> {
    let [cmf, flg, ..] = *input else { return None };
    // zlib's checks: the header checksum, deflate, a window of at most 32 KiB; no preset dictionary.
    let header = (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0 && cmf & 0x0f == 8 && cmf >> 4 <= 7;
    if !header || flg & 0x20 != 0 || max == 0 {
        return None;
    }
    let mut bits = Bits { input: &input[2..], pos: 0, buf: 0, count: 0 };
    let mut out = Vec::with_capacity(max);
    loop {
        let last = bits.take(1)? == 1;
        let stop = match bits.take(2)? {
            0 => stored(&mut bits, &mut out, max)?,
            1 => codes(&mut bits, &mut out, max, &*FIXED_TABLES)?,
            2 => {
                let (lit, dist) = dynamic(&mut bits)?;
                codes(&mut bits, &mut out, max, &(lit, dist))?
            }
            _ => return None,
        };
        match stop {
            Stop::Full => return Some(out),
            Stop::BlockEnd if last => {
                // zlib checks the Adler-32 that follows the last block before it reports the end.
                bits.align();
                let check = bits.bytes(4)?;
                return (u32::from_be_bytes(check.try_into().ok()?) == adler32(&out)).then_some(out);
            }
            Stop::BlockEnd => {}
        }
    }
}

/// A stored block: `LEN`, its complement, `LEN` bytes.
fn stored(bits: &mut Bits, out: &mut Vec<u8>, max: usize) -> Option<Stop> {
    bits.align();
    let lengths = bits.bytes(4)?;
    let (len, complement) =
        (u16::from_le_bytes([lengths[0], lengths[1]]), u16::from_le_bytes([lengths[2], lengths[3]]));
    if len != !complement {
        return None;
    }
    let len = usize::from(len);
    if len == 0 {
        return Some(Stop::BlockEnd);
    }
    let n = len.min(max - out.len());
    out.extend_from_slice(bits.bytes(n)?);
    Some(if n < len { Stop::Full } else { Stop::BlockEnd })
}

/// Length codes 257..=285: base lengths and extra bits.
const LENGTH_BASE: [u16; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA: [u32; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
/// Distance codes 0..=29: base distances and extra bits.
const DISTANCE_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577,
];
const DISTANCE_EXTRA: [u32; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];

/// The codes of a Huffman block, up to its end or until `max` bytes are out and the next code would write.
/// Checks in zlib's order: an invalid length or distance code fails even when the output is full; a distance
/// past the bytes so far only when the match would be copied.
fn codes(bits: &mut Bits, out: &mut Vec<u8>, max: usize, code: &impl Codes) -> Option<Stop> {
    loop {
        let symbol = code.literal(bits)?;
        if symbol < 256 {
            if out.len() == max {
                return Some(Stop::Full);
            }
            out.push(symbol as u8);
            continue;
        }
        if symbol == 256 {
            return Some(Stop::BlockEnd);
        }
        let at = usize::from(symbol - 257);
        let length = usize::from(*LENGTH_BASE.get(at)?) + bits.take(LENGTH_EXTRA[at])? as usize;
        let at = usize::from(code.distance(bits)?);
        let distance = usize::from(*DISTANCE_BASE.get(at)?) + bits.take(DISTANCE_EXTRA[at])? as usize;
        if out.len() == max {
            return Some(Stop::Full);
        }
        // Nothing came before this stream: a distance past the bytes so far is damage (zlib says which).
        let from = out.len().checked_sub(distance)?;
        let n = length.min(max - out.len());
        for at in from..from + n {
            out.push(out[at]);
        }
        if n < length {
            return Some(Stop::Full);
        }
    }
}

/// Order in which a dynamic block lists the code length code's lengths.
const ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/// A dynamic block's header: its literal/length and distance codes, refused where zlib refuses them.
fn dynamic(bits: &mut Bits) -> Option<(Huffman<288>, Huffman<32>)> {
    let nlen = bits.take(5)? as usize + 257;
    let ndist = bits.take(5)? as usize + 1;
    let ncode = bits.take(4)? as usize + 4;
    if nlen > 286 || ndist > 30 {
        return None;
    }
    let mut lengths = [0u8; 19];
    for &symbol in &ORDER[..ncode] {
        lengths[symbol] = bits.take(3)? as u8;
    }
    let code_lengths = code_length_table(&lengths)?;
    let mut lengths = [0u8; 286 + 30];
    let mut have = 0;
    while have < nlen + ndist {
        let symbol = bits.lookup(&code_lengths)?;
        if symbol < 16 {
            // One length: most of a header's symbols. Stored here, not through `fill`, which calls `memset` (a
            // million calls for 100,000 --batch-check requests).
            lengths[have] = symbol;
            have += 1;
            continue;
        }
        let (length, repeat) = match symbol {
            16 => (*lengths[..have].last()?, 3 + bits.take(2)? as usize),
            17 => (0, 3 + bits.take(3)? as usize),
            _ => (0, 11 + bits.take(7)? as usize),
        };
        let end = have + repeat;
        if end > nlen + ndist {
            return None;
        }
        lengths[have..end].fill(length);
        have = end;
    }
    if lengths[256] == 0 {
        return None;
    }
    // zlib takes an incomplete code only when its one code is one bit long (and no distance code at all).
    let (lit, incomplete, longest) = Huffman::new(&lengths[..nlen])?;
    if incomplete && longest != 1 {
        return None;
    }
    let (dist, incomplete, longest) = Huffman::new(&lengths[nlen..have])?;
    if incomplete && longest > 1 {
        return None;
    }
    Some((lit, dist))
}

/// The code length code's codes are at most 7 bits long: it is decoded by looking up the next 7 bits.
const CODE_LENGTH_BITS: u32 = 7;

/// The code length code as a table of `(symbol, code length)` indexed by the next 7 bits (least significant
/// first), so that the hundreds of code lengths of a dynamic header cost one lookup each. zlib wants this code
/// complete (all lengths zero is a special case of its own: not handled).
fn code_length_table(lengths: &[u8; 19]) -> Option<[(u16, u8); 1 << CODE_LENGTH_BITS]> {
    let (code, incomplete, _) = Huffman::<19>::new(lengths)?;
    if incomplete {
        return None;
    }
    let mut table = [(0, 0); 1 << CODE_LENGTH_BITS];
    fill_table(&code, CODE_LENGTH_BITS, &mut table);
    Some(table)
}

/// A canonical Huffman code: how many codes have each length, and the symbols in code order.
struct Huffman<const N: usize> {
    count: [u16; 16],
    symbol: [u16; N],
    /// The shortest code length (0: no codes).
    shortest: u32,
}

impl<const N: usize> Huffman<N> {
    /// The code with these code lengths (at most `N`), whether it is incomplete, and its longest length;
    /// `None` when it is over-subscribed.
    fn new(lengths: &[u8]) -> Option<(Self, bool, u8)> {
        let mut count = [0u16; 16];
        for &length in lengths {
            count[usize::from(length)] += 1;
        }
        let mut left: i32 = 1;
        for &n in &count[1..] {
            left = (left << 1) - i32::from(n);
            if left < 0 {
                return None;
            }
        }
        let mut offsets = [0u16; 16];
        for length in 1..15 {
            offsets[length + 1] = offsets[length] + count[length];
        }
        let mut symbol = [0u16; N];
        for (at, &length) in lengths.iter().enumerate().filter(|(_, length)| **length != 0) {
            symbol[usize::from(offsets[usize::from(length)])] = at as u16;
            offsets[usize::from(length)] += 1;
        }
        let longest = (1..16).rev().find(|&length| count[length] != 0).unwrap_or(0) as u8;
        let shortest = (1..16).find(|&length| count[length] != 0).unwrap_or(0) as u32;
        count[0] = 0;
        Some((Huffman { count, symbol, shortest }, left > 0, longest))
    }
}

/// The fixed codes: literal/lengths 0..=287, distances 0..=31 (zlib lists 286, 287, 30 and 31 as invalid).
static FIXED: LazyLock<(Huffman<288>, Huffman<32>)> = LazyLock::new(|| {
    let mut lengths = [8u8; 288];
    lengths[144..256].fill(9);
    lengths[256..280].fill(7);
    let (lit, _, _) = Huffman::new(&lengths).expect("the fixed literal/length code");
    let (dist, _, _) = Huffman::new(&[5; 32]).expect("the fixed distance code");
    (lit, dist)
});

/// How a block's symbols are decoded: a dynamic block's codes length by length ([`Bits::decode`]), the fixed
/// codes by a table lookup.
trait Codes {
    fn literal(&self, bits: &mut Bits) -> Option<u16>;
    fn distance(&self, bits: &mut Bits) -> Option<u16>;
}

impl Codes for (Huffman<288>, Huffman<32>) {
    fn literal(&self, bits: &mut Bits) -> Option<u16> {
        bits.decode(&self.0)
    }

    fn distance(&self, bits: &mut Bits) -> Option<u16> {
        bits.decode(&self.1)
    }
}

/// The fixed literal/length code's longest code, and the fixed distance code's only length.
const FIXED_LITERAL_BITS: u32 = 9;
const FIXED_DISTANCE_BITS: u32 = 5;

/// The fixed codes as tables of `(symbol, code length)` indexed by the next bits (least significant first): most
/// deltas are small, and deflate writes a small stream as one fixed block, whose symbols a puff-style decode
/// finds a length at a time (7 to 9 steps). The codes are complete, so every index is some code.
struct FixedTables {
    literal: Vec<(u16, u8)>,
    distance: Vec<(u16, u8)>,
}

static FIXED_TABLES: LazyLock<FixedTables> = LazyLock::new(|| FixedTables {
    literal: table(&FIXED.0, FIXED_LITERAL_BITS),
    distance: table(&FIXED.1, FIXED_DISTANCE_BITS),
});

impl Codes for FixedTables {
    fn literal(&self, bits: &mut Bits) -> Option<u16> {
        bits.lookup_wide(&self.literal, FIXED_LITERAL_BITS).or_else(|| bits.decode(&FIXED.0))
    }

    fn distance(&self, bits: &mut Bits) -> Option<u16> {
        bits.lookup_wide(&self.distance, FIXED_DISTANCE_BITS).or_else(|| bits.decode(&FIXED.1))
    }
}

/// A complete code whose codes are at most `width` bits long, as a table of `(symbol, code length)` indexed by
/// the next `width` bits, least significant first.
fn table<const N: usize>(code: &Huffman<N>, width: u32) -> Vec<(u16, u8)> {
    let mut table = vec![(0, 0); 1 << width];
    fill_table(code, width, &mut table);
    table
}

/// Fills `table` (`1 << width` slots) with `code`, a complete code whose codes are at most `width` bits long:
/// the slot of every `width` bits (least significant first) gets the symbol their first bits code, and its length.
fn fill_table<const N: usize>(code: &Huffman<N>, width: u32, table: &mut [(u16, u8)]) {
    let (mut next, mut at) = (0u32, 0);
    for length in 1..=width {
        for _ in 0..code.count[length as usize] {
            // Codes are sent most significant bit first: the table is indexed by the bits reversed.
            let reversed = (next.reverse_bits() >> (32 - length)) as usize;
            for slot in (reversed..table.len()).step_by(1 << length) {
                table[slot] = (code.symbol[at], length as u8);
            }
            next += 1;
            at += 1;
        }
        next <<= 1;
    }
}

/// Deflate's bits, least significant first, from a 64-bit buffer.
struct Bits<'a> {
    input: &'a [u8],
    /// The next byte not in `buf`.
    pos: usize,
    buf: u64,
    /// Bits of `buf` that are input (above them may be copies of the next input bits).
    count: u32,
}

impl<'a> Bits<'a> {
    /// Fills `buf` to at least 56 bits, or with all the input there is.
    fn refill(&mut self) {
        if let Some(word) = self.input.get(self.pos..self.pos + 8) {
            self.buf |= u64::from_le_bytes(word.try_into().expect("8 bytes")) << self.count;
            self.pos += (63 - self.count as usize) >> 3;
            self.count |= 56;
        } else {
            while self.count < 56 && self.pos < self.input.len() {
                self.buf |= u64::from(self.input[self.pos]) << self.count;
                self.pos += 1;
                self.count += 8;
            }
        }
    }

    /// The next `n` (≤ 32) bits as a number; `None` at the end of the input.
    fn take(&mut self, n: u32) -> Option<u32> {
        if self.count < n {
            self.refill();
            if self.count < n {
                return None;
            }
        }
        let value = (self.buf & ((1u64 << n) - 1)) as u32;
        self.buf >>= n;
        self.count -= n;
        Some(value)
    }

    /// The next symbol of `code`, length by length from its shortest (puff's `decode`); `None` for a bit string
    /// that is no code (an incomplete code's gap) or at the end of the input.
    fn decode<const N: usize>(&mut self, code: &Huffman<N>) -> Option<u16> {
        if self.count < 15 {
            self.refill();
        }
        let (shortest, longest) = (code.shortest, self.count.min(15));
        if shortest == 0 || shortest > longest {
            return None;
        }
        // The first `shortest` bits, most significant first; no code is shorter, so none comes before them.
        let mut value = i32::from((self.buf as u16).reverse_bits() >> (16 - shortest));
        let (mut bits, mut first, mut index) = (self.buf >> shortest, 0i32, 0i32);
        let mut length = shortest;
        loop {
            let count = i32::from(code.count[length as usize]);
            if value - first < count {
                self.buf >>= length;
                self.count -= length;
                return Some(code.symbol[(index + value - first) as usize]);
            }
            index += count;
            first = (first + count) << 1;
            length += 1;
            if length > longest {
                return None;
            }
            value = value << 1 | (bits & 1) as i32;
            bits >>= 1;
        }
    }

    /// The next symbol of the code length code.
    fn lookup(&mut self, table: &[(u16, u8); 1 << CODE_LENGTH_BITS]) -> Option<u8> {
        if self.count < CODE_LENGTH_BITS {
            self.refill();
        }
        let (symbol, length) = table[(self.buf & ((1 << CODE_LENGTH_BITS) - 1)) as usize];
        let length = u32::from(length);
        if length > self.count {
            return None;
        }
        self.buf >>= length;
        self.count -= length;
        // Code length symbols are 0..=18.
        Some(symbol as u8)
    }

    /// The next symbol from a table of [`table`] `width` bits wide; `None` when fewer than `width` bits of input
    /// are left (the caller decodes those a length at a time, as a short code may still fit).
    fn lookup_wide(&mut self, table: &[(u16, u8)], width: u32) -> Option<u16> {
        if self.count < width {
            self.refill();
            if self.count < width {
                return None;
            }
        }
        let (symbol, length) = table[(self.buf & ((1 << width) - 1)) as usize];
        self.buf >>= length;
        self.count -= u32::from(length);
        Some(symbol)
    }

    /// Drops the bits to the next byte boundary and gives back the whole bytes not used yet.
    fn align(&mut self) {
        self.pos -= (self.count / 8) as usize;
        self.buf = 0;
        self.count = 0;
    }

    /// The next `n` bytes, after [`Self::align`].
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.input.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(bytes)
    }
}

/// Adler-32 of `data` (reduced every 5552 bytes, before a `u32` sum can overflow).
fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    b << 16 | a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testpack::noise;
    use std::io::Write;

    fn zlib(data: &[u8], level: u32) -> Vec<u8> {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    /// Inputs of every kind deflate makes: stored (level 0, random bytes), fixed (short), dynamic (long),
    /// matches that overlap (runs), several blocks.
    fn samples() -> Vec<Vec<u8>> {
        let text: Vec<u8> = (0..3000u32).flat_map(|n| format!("line {n} of {}\n", n % 7).into_bytes()).collect();
        let delta_like: Vec<u8> = [&[0x90, 0x4e, 0xa5, 0x4f, 0x91, 0x10, 0x02][..], &text[..500]].concat();
        vec![
            Vec::new(),
            b"a".to_vec(),
            b"abc".to_vec(),
            vec![b'x'; 100],
            vec![0; 70_000],
            noise(1, 10),
            noise(2, 300),
            noise(3, 100_000),
            text,
            delta_like,
            (0..200_000u32).flat_map(|n| (n / 3).to_le_bytes()).collect(),
        ]
    }

    #[test]
    fn every_level_and_length_of_deflate_is_decoded_as_zlib_decodes_it() {
        for data in samples() {
            for level in 0..=9 {
                let compressed = zlib(&data, level);
                for max in (1..=64).chain([200, 1 << 16]) {
                    let what = format!("{} bytes at level {level}, max {max}", data.len());
                    assert!(check_against_zlib(&compressed, max), "{what}: left to zlib");
                    assert_eq!(inflate_head(&compressed, max).unwrap(), &data[..max.min(data.len())], "{what}");
                }
            }
        }
    }

    /// The table lookup of a fixed code and the length-by-length decode agree on every bit string: the symbol
    /// and the bits it takes.
    #[test]
    fn the_fixed_tables_give_what_decoding_a_length_at_a_time_gives() {
        fn agree<const N: usize>(table: &[(u16, u8)], code: &Huffman<N>, width: u32) {
            for pattern in 0u32..(1 << width) {
                let input = [pattern.to_le_bytes(), [0; 4]].concat();
                let mut by_table = Bits { input: &input, pos: 0, buf: 0, count: 0 };
                let mut by_length = Bits { input: &input, pos: 0, buf: 0, count: 0 };
                let symbol = by_table.lookup_wide(table, width);
                assert_eq!(symbol, by_length.decode(code), "bits {pattern:0width$b}", width = width as usize);
                assert_eq!(by_table.count, by_length.count, "bits {pattern:0width$b}", width = width as usize);
            }
        }
        agree(&FIXED_TABLES.literal, &FIXED.0, FIXED_LITERAL_BITS);
        agree(&FIXED_TABLES.distance, &FIXED.1, FIXED_DISTANCE_BITS);
    }

    /// Small inputs of every byte value, of few values, and of repeats (matches of many lengths and distances),
    /// which deflate writes as one fixed block: every head is the full inflate's first bytes, decoded here.
    #[test]
    fn fixed_blocks_give_the_head_of_a_full_inflate() {
        use std::io::Read;
        let mut fixed = 0;
        for seed in 0..200u64 {
            let raw = noise(seed, (seed as usize * 7) % 120 + 1);
            let data: Vec<u8> = match seed % 3 {
                0 => raw[..raw.len().min(24)].repeat(2 + seed as usize % 6),
                1 => raw.iter().map(|b| b % 16 + b'a').collect(),
                _ => raw.chunks(1 + seed as usize % 9).flat_map(|c| c.repeat(2 + seed as usize % 5)).collect(),
            };
            for level in [1, 6, 9] {
                let compressed = zlib(&data, level);
                fixed += usize::from(compressed[2] >> 1 & 3 == 1);
                let mut full = Vec::new();
                flate2::read::ZlibDecoder::new(&compressed[..]).read_to_end(&mut full).expect("a whole stream");
                assert_eq!(full, data);
                for max in [1, 2, 7, 20, 64, data.len(), data.len() + 1] {
                    let what = format!("seed {seed}, level {level}, max {max}");
                    assert!(check_against_zlib(&compressed, max), "{what}: left to zlib");
                    assert_eq!(inflate_head(&compressed, max).expect(&what), &full[..max.min(full.len())], "{what}");
                }
            }
        }
        assert!(fixed > 60, "only {fixed} of 600 streams are fixed blocks");
    }

    #[test]
    fn cut_and_damaged_streams_get_zlibs_answer() {
        for (n, data) in samples().into_iter().enumerate() {
            for level in [0, 1, 6, 9] {
                let compressed = zlib(&data[..data.len().min(2000)], level);
                let head = &compressed[..compressed.len().min(400)];
                for cut in 0..head.len() {
                    for max in [1, 5, 20, 32, 64] {
                        check_against_zlib(&head[..cut], max);
                    }
                }
                // One bit flipped, at every bit of the first 200 bytes and at random places after.
                let mut flips: Vec<usize> = (0..(compressed.len().min(200) * 8)).collect();
                flips.extend(noise(n as u64 + 7, 64).iter().map(|r| usize::from(*r) * compressed.len() / 32));
                for bit in flips.into_iter().filter(|bit| bit / 8 < compressed.len()) {
                    let mut damaged = compressed.clone();
                    damaged[bit / 8] ^= 1 << (bit % 8);
                    for max in [1, 3, 20, 32, 64, 1 << 16] {
                        check_against_zlib(&damaged, max);
                    }
                }
            }
        }
    }

    #[test]
    fn the_head_of_a_stream_is_inflated_without_the_rest() {
        let body: Vec<u8> = (0..100_000u32).flat_map(|n| n.to_le_bytes()).collect();
        let compressed = zlib(&body, 6);
        assert_eq!(inflate_head(&compressed, 20).unwrap(), &body[..20]);
        assert_eq!(inflate_head(&zlib(b"abc", 6), 20).unwrap(), b"abc");
        assert!(inflate_head(b"not zlib", 20).is_err());
        // A stream cut short gives what it has, or an error when that is nothing.
        let stored = [&[0x78, 0x01, 0x01, 0x0a, 0x00, 0xf5, 0xff][..], b"0123456789"].concat();
        assert_eq!(inflate_head(&stored[..12], 20).unwrap(), b"01234");
        assert!(inflate_head(&stored[..7], 20).is_err());
        assert!(inflate_head(&compressed[..1], 20).is_err());
    }

    /// A zlib header, then a stored block holding `data` (`last`: the final block).
    fn stored_block(last: bool, data: &[u8]) -> Vec<u8> {
        let len = data.len() as u16;
        [&[u8::from(last)][..], &len.to_le_bytes(), &(!len).to_le_bytes(), data].concat()
    }

    #[test]
    fn damage_zlib_reads_on_to_after_the_last_byte_asked_is_an_error_too() {
        let header = [0x78, 0x01];
        // Three bytes, then a block of the invalid type 3: zlib reads that header before it stops.
        let bad_type = [&header[..], &stored_block(false, b"abc"), &[0x07]].concat();
        assert_eq!(inflate_head(&bad_type, 2).unwrap(), b"ab", "zlib stops inside the stored block");
        assert!(!check_against_zlib(&bad_type, 3));
        assert!(inflate_head(&bad_type, 3).is_err());
        // The stream ends exactly at the last byte asked: zlib checks the Adler-32 first.
        let good = [&header[..], &stored_block(true, b"abc"), &adler32(b"abc").to_be_bytes()].concat();
        assert!(check_against_zlib(&good, 3));
        assert_eq!(inflate_head(&good, 3).unwrap(), b"abc");
        let bad_check = [&good[..good.len() - 1], &[good[good.len() - 1] ^ 1]].concat();
        assert!(!check_against_zlib(&bad_check, 3));
        assert!(inflate_head(&bad_check, 3).is_err());
        // A preset dictionary is left to zlib, which asks for it (an error here).
        let dictionary = [0x78, 0xbb, 0, 0, 0, 1, 0x4b, 0x04, 0x00];
        assert!(!check_against_zlib(&dictionary, 20));
        assert!(inflate_head(&dictionary, 20).is_err());
    }

    #[test]
    fn a_match_past_the_start_of_the_stream_is_zlibs_error_unless_the_output_is_full() {
        // Fixed codes: literal 'a' (0x61: 8 bits 0x91), then length 3 (code 257, 7 bits 0000001) at distance 2
        // (code 1, 5 bits 00001): one byte is out, so distance 2 reaches before the stream.
        let mut writer = BitWriter::default();
        writer.bits(0b1, 1); // final
        writer.bits(0b01, 2); // fixed
        writer.code(0x30 + 0x61, 8);
        writer.code(0b0000001, 7);
        writer.code(0b00001, 5);
        writer.code(0, 7); // end of block
        let stream = [&[0x78, 0x01][..], &writer.finish()].concat();
        assert!(check_against_zlib(&stream, 1), "full after 'a': zlib stops before it copies");
        assert_eq!(inflate_head(&stream, 1).unwrap(), b"a");
        assert!(!check_against_zlib(&stream, 2));
        assert!(inflate_head(&stream, 2).is_err());
    }

    /// Deflate's bit order for hand-made blocks.
    #[derive(Default)]
    struct BitWriter {
        out: Vec<u8>,
        buf: u32,
        count: u32,
    }

    impl BitWriter {
        /// `value`'s `n` low bits, least significant first (headers, extra bits).
        fn bits(&mut self, value: u32, n: u32) {
            self.buf |= value << self.count;
            self.count += n;
            while self.count >= 8 {
                self.out.push(self.buf as u8);
                self.buf >>= 8;
                self.count -= 8;
            }
        }

        /// A Huffman code of `n` bits, most significant first.
        fn code(&mut self, code: u32, n: u32) {
            for bit in (0..n).rev() {
                self.bits(code >> bit & 1, 1);
            }
        }

        fn finish(mut self) -> Vec<u8> {
            if self.count > 0 {
                self.out.push(self.buf as u8);
            }
            self.out
        }
    }
}
