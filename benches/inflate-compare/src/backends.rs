//! The inflaters under comparison, each used the way a store would: one long-lived state per thread,
//! reset per entry, and the whole stream inflated in a single call into a buffer of the declared size.
use std::ffi::{CStr, c_int};
use std::ptr;

use anyhow::{anyhow, bail, ensure};

/// A whole-buffer zlib inflater.
pub trait Backend {
    fn name(&self) -> &'static str;
    /// Which crate and API this is, for the printed report.
    fn describe(&self) -> String;
    /// Inflates the zlib stream `input` into `out`, which must end up exactly full: a stream that ends early
    /// or needs more room is an error, as it is in the store.
    fn inflate(&mut self, input: &[u8], out: &mut [u8]) -> anyhow::Result<()>;
}

/// libdeflate through `libdeflater`: what cat-blobd ships. Whole-buffer only; never sees a partial stream.
pub struct Libdeflate(libdeflater::Decompressor);

impl Libdeflate {
    pub fn new() -> Self {
        Libdeflate(libdeflater::Decompressor::new())
    }
}

impl Backend for Libdeflate {
    fn name(&self) -> &'static str {
        "libdeflate"
    }

    fn describe(&self) -> String {
        "libdeflater 1.26 Decompressor::zlib_decompress (libdeflate C, bundled by libdeflate-sys)".into()
    }

    fn inflate(&mut self, input: &[u8], out: &mut [u8]) -> anyhow::Result<()> {
        let n = self.0.zlib_decompress(input, out).map_err(|e| anyhow!("{e:?}"))?;
        ensure!(n == out.len(), "inflated {n} bytes, declared {}", out.len());
        Ok(())
    }
}

/// zlib-rs through its own safe streaming API (`zlib_rs::Inflate`), no C shim in between.
pub struct ZlibRs(zlib_rs::Inflate);

impl ZlibRs {
    pub fn new() -> Self {
        ZlibRs(zlib_rs::Inflate::new(true, 15))
    }
}

impl Backend for ZlibRs {
    fn name(&self) -> &'static str {
        "zlib-rs"
    }

    fn describe(&self) -> String {
        "zlib-rs 0.6 zlib_rs::Inflate::decompress(.., InflateFlush::Finish), reset per entry".into()
    }

    fn inflate(&mut self, input: &[u8], out: &mut [u8]) -> anyhow::Result<()> {
        self.0.reset(true);
        let status = self.0.decompress(input, out, zlib_rs::InflateFlush::Finish).map_err(|e| anyhow!("{e:?}"))?;
        ensure!(status == zlib_rs::Status::StreamEnd, "stream did not end: {status:?}");
        ensure!(
            self.0.total_out() == out.len() as u64,
            "inflated {} bytes, declared {}",
            self.0.total_out(),
            out.len()
        );
        Ok(())
    }
}

/// zlib-ng (native, `zng_`-prefixed API, built from source by `libz-ng-sys`) through flate2's safe wrapper.
pub struct ZlibNg(flate2::Decompress);

impl ZlibNg {
    pub fn new() -> Self {
        ZlibNg(flate2::Decompress::new(true))
    }
}

impl Backend for ZlibNg {
    fn name(&self) -> &'static str {
        "zlib-ng"
    }

    fn describe(&self) -> String {
        "flate2 1.1 (feature zlib-ng -> libz-ng-sys 1.1) Decompress::decompress(.., FlushDecompress::Finish), reset per entry"
            .into()
    }

    fn inflate(&mut self, input: &[u8], out: &mut [u8]) -> anyhow::Result<()> {
        self.0.reset(true);
        let status = self.0.decompress(input, out, flate2::FlushDecompress::Finish)?;
        ensure!(status == flate2::Status::StreamEnd, "stream did not end: {status:?}");
        ensure!(
            self.0.total_out() == out.len() as u64,
            "inflated {} bytes, declared {}",
            self.0.total_out(),
            out.len()
        );
        Ok(())
    }
}

/// The system's zlib (`libz-sys`, dynamically linked) as the baseline. flate2 can only carry one C backend,
/// and it carries zlib-ng, so this one talks to the C API directly.
pub struct SystemZlib {
    /// Boxed: zlib's internal state points back at the stream, so it must never move.
    stream: Box<libz_sys::z_stream>,
}

extern "C" fn zalloc(_opaque: libz_sys::voidpf, items: libz_sys::uInt, size: libz_sys::uInt) -> libz_sys::voidpf {
    // SAFETY: calloc has no preconditions; zlib checks the result for NULL.
    unsafe { libc::calloc(items as libc::size_t, size as libc::size_t) }
}

extern "C" fn zfree(_opaque: libz_sys::voidpf, address: libz_sys::voidpf) {
    // SAFETY: zlib only frees what `zalloc` returned, which came from calloc.
    unsafe { libc::free(address) }
}

impl SystemZlib {
    pub fn new() -> anyhow::Result<Self> {
        let mut stream = Box::new(libz_sys::z_stream {
            next_in: ptr::null_mut(),
            avail_in: 0,
            total_in: 0,
            next_out: ptr::null_mut(),
            avail_out: 0,
            total_out: 0,
            msg: ptr::null_mut(),
            state: ptr::null_mut(),
            zalloc,
            zfree,
            opaque: ptr::null_mut(),
            data_type: 0,
            adler: 0,
            reserved: 0,
        });
        // SAFETY: the stream is fully initialised with no input and a working allocator, as inflateInit
        // requires; the version string and struct size are the ones libz-sys declares.
        let rc = unsafe {
            libz_sys::inflateInit_(
                &mut *stream,
                libz_sys::zlibVersion(),
                std::mem::size_of::<libz_sys::z_stream>() as c_int,
            )
        };
        if rc != libz_sys::Z_OK {
            bail!("inflateInit_ failed: {rc}");
        }
        Ok(SystemZlib { stream })
    }
}

impl Drop for SystemZlib {
    fn drop(&mut self) {
        // SAFETY: the stream was initialised by inflateInit_ in `new` and is ended exactly once.
        unsafe { libz_sys::inflateEnd(&mut *self.stream) };
    }
}

impl Backend for SystemZlib {
    fn name(&self) -> &'static str {
        "system zlib"
    }

    fn describe(&self) -> String {
        // SAFETY: zlibVersion returns a pointer to a static NUL-terminated string.
        let version = unsafe { CStr::from_ptr(libz_sys::zlibVersion()) };
        format!("libz-sys 1.1 (system libz {}) inflate(Z_FINISH), inflateReset per entry", version.to_string_lossy())
    }

    fn inflate(&mut self, input: &[u8], out: &mut [u8]) -> anyhow::Result<()> {
        let stream = &mut *self.stream;
        // SAFETY: the stream was initialised by inflateInit_ in `new`.
        let rc = unsafe { libz_sys::inflateReset(stream) };
        ensure!(rc == libz_sys::Z_OK, "inflateReset failed: {rc}");
        stream.next_in = input.as_ptr().cast_mut();
        stream.avail_in = input.len().try_into()?;
        stream.next_out = out.as_mut_ptr();
        stream.avail_out = out.len().try_into()?;
        // SAFETY: next_in/avail_in describe `input`, which zlib only reads; next_out/avail_out describe
        // `out`; both outlive this call, and the pointers are cleared before either borrow ends.
        let rc = unsafe { libz_sys::inflate(stream, libz_sys::Z_FINISH) };
        stream.next_in = ptr::null_mut();
        stream.next_out = ptr::null_mut();
        ensure!(rc == libz_sys::Z_STREAM_END, "inflate returned {rc}, not Z_STREAM_END");
        ensure!(stream.total_out as usize == out.len(), "inflated {} bytes, declared {}", stream.total_out, out.len());
        Ok(())
    }
}
