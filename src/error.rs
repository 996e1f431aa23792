//! One error type for the whole crate. Errors are data: each variant carries
//! what the caller needs to act on it (the path, the chunk, the c-blosc2
//! code) besides a sentence for people. The C layer alone maps them to the
//! five caterva 0.5 codes (`src/ffi`).

use std::fmt;

/// The result type of every fallible operation in this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// An argument (shape, partition, region, buffer size, name…) is
    /// invalid; the message names it.
    InvalidArgument(String),
    /// An index is out of range, or an axis cannot be squeezed.
    InvalidIndex(String),
    /// A required pointer was NULL (only produced by the C layer).
    NullPointer(String),
    /// The storage described is not usable: nothing at the path, a path
    /// taken by something that is not an array, an array another handle is
    /// writing, …
    InvalidStorage {
        /// The path concerned, when there is one.
        path: Option<String>,
        /// Why.
        reason: String,
    },
    /// Nothing is at the path (C callers get `CATERVA_ERR_INVALID_STORAGE`,
    /// as for [`Error::InvalidStorage`]).
    NotFound {
        /// The path.
        path: String,
    },
    /// The bytes on disk or in a buffer are not a valid caterva array (a
    /// damaged frame, contradictory metalayers, a corrupt journal).
    InvalidFormat(String),
    /// The data is sound as far as can be told but uses what this build
    /// cannot decode: a codec or filter plugin c-blosc2 was built without,
    /// a chunk or frame format of a newer c-blosc2. Not damage: another
    /// reader may read it, and a copy through one that can converts it.
    /// (C callers get `CATERVA_ERR_INVALID_ARGUMENT`, as for
    /// [`Error::InvalidFormat`].)
    Unsupported {
        /// The feature, in a few words, for grouping and reports:
        /// `"filter BYTEDELTA"`, `"codec ZFP_ACC"`, `"chunk format version 6"`.
        feature: String,
        /// The whole sentence: where, what, and which c-blosc2 cannot decode it.
        reason: String,
    },
    /// c-blosc2 reported a failure.
    Blosc {
        /// What was being done ("appending chunk 3", …).
        op: String,
        /// c-blosc2's (negative) error code, when it gave one.
        code: Option<i32>,
    },
    /// An operating-system I/O error.
    Io {
        /// What was being done, with the path ("syncing 'a.b2frame'").
        op: String,
        /// The path concerned, when there is one.
        path: Option<String>,
        /// The kind of I/O error.
        kind: std::io::ErrorKind,
        /// The system's description.
        message: String,
    },
    /// Another writer changed the array first: nothing was written (its
    /// kind is [`ErrorKind::InvalidStorage`]). Arrays on object stores are
    /// changed optimistically: bring the handle up to date
    /// ([`crate::Array::refresh`]) and make the change again; the library's
    /// own writes of items do so themselves.
    Conflict {
        /// The array's URL.
        path: String,
        /// Why.
        reason: String,
    },
    /// Stored data fails its integrity check.
    Corrupt {
        /// The chunk that fails (`-1` for the checksum table itself).
        chunk: i64,
        /// Why.
        reason: String,
    },
    /// Another handle (of this process or another) changed the array since
    /// this one opened, wrote or refreshed it, in a way that leaves what
    /// this handle knows of it (where its chunks lie) out of date: nothing
    /// was read or written. Refresh the handle ([`crate::Array::refresh`])
    /// and try again. Never a sign of damage.
    Changed {
        /// The array's path.
        path: String,
    },
}

/// The class of an [`Error`], without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::InvalidArgument`].
    InvalidArgument,
    /// [`Error::InvalidIndex`].
    InvalidIndex,
    /// [`Error::NullPointer`].
    NullPointer,
    /// [`Error::InvalidStorage`].
    InvalidStorage,
    /// [`Error::NotFound`].
    NotFound,
    /// [`Error::InvalidFormat`].
    InvalidFormat,
    /// [`Error::Unsupported`].
    Unsupported,
    /// [`Error::Blosc`].
    Blosc,
    /// [`Error::Io`].
    Io,
    /// [`Error::Corrupt`].
    Corrupt,
    /// [`Error::Changed`].
    Changed,
}

impl Error {
    /// A c-blosc2 failure while doing `op`.
    pub(crate) fn blosc(op: impl Into<String>, code: impl Into<Option<i64>>) -> Self {
        let code = code.into().map(|c| i32::try_from(c).unwrap_or(i32::MIN));
        Error::Blosc { op: op.into(), code }
    }

    /// Nothing at `path`.
    pub(crate) fn not_found(path: &str) -> Self {
        Error::NotFound { path: path.to_owned() }
    }

    /// An unusable storage at `path`.
    pub(crate) fn storage(path: Option<&str>, reason: impl Into<String>) -> Self {
        Error::InvalidStorage { path: path.map(str::to_owned), reason: reason.into() }
    }

    /// An I/O error `e` while doing `op` on `path`.
    pub(crate) fn io(op: &str, path: Option<&std::path::Path>, e: &std::io::Error) -> Self {
        let path = path.map(|p| p.display().to_string());
        let op = match &path {
            Some(p) => format!("{op} '{p}'"),
            None => op.to_owned(),
        };
        Error::Io { op, path, kind: e.kind(), message: e.to_string() }
    }

    /// What this build cannot decode: `feature` in a few words, `reason` the sentence.
    pub(crate) fn unsupported(feature: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Unsupported { feature: feature.into(), reason: reason.into() }
    }

    /// Chunk `chunk` fails its integrity check.
    pub(crate) fn corrupt(chunk: i64, reason: impl Into<String>) -> Self {
        Error::Corrupt { chunk, reason: reason.into() }
    }

    /// The class of this error.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::InvalidIndex(_) => ErrorKind::InvalidIndex,
            Error::NullPointer(_) => ErrorKind::NullPointer,
            Error::InvalidStorage { .. } | Error::Conflict { .. } => ErrorKind::InvalidStorage,
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::InvalidFormat(_) => ErrorKind::InvalidFormat,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::Blosc { .. } => ErrorKind::Blosc,
            Error::Io { .. } => ErrorKind::Io,
            Error::Corrupt { .. } => ErrorKind::Corrupt,
            Error::Changed { .. } => ErrorKind::Changed,
        }
    }

    /// The reason, without the kind.
    #[must_use]
    pub fn message(&self) -> String {
        Reason(self).to_string()
    }
}

/// The reason of an error, displayed without allocating (the C layer records
/// error messages without risking an abort on a failed allocation).
struct Reason<'a>(&'a Error);

impl fmt::Display for Reason<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Error::InvalidArgument(m) | Error::InvalidIndex(m) | Error::NullPointer(m) | Error::InvalidFormat(m) => {
                f.write_str(m)
            }
            Error::InvalidStorage { reason, .. }
            | Error::Conflict { reason, .. }
            | Error::Corrupt { reason, .. }
            | Error::Unsupported { reason, .. } => f.write_str(reason),
            Error::Blosc { op, code: Some(c) } => match blosc2_error_name(*c) {
                Some((name, words)) => write!(f, "{op} failed: {words} (c-blosc2's BLOSC2_ERROR_{name})"),
                None => write!(f, "{op} failed: c-blosc2 gave an error it does not name (code {c})"),
            },
            Error::Blosc { op, code: None } => write!(f, "{op} failed"),
            Error::Io { op, message, .. } => write!(f, "{op}: {message}"),
            Error::NotFound { path } => write!(f, "'{path}' does not exist"),
            Error::Changed { path } => write!(
                f,
                "'{path}' was changed by another handle or process since this handle opened, wrote or \
                 refreshed it; refresh the handle and try again"
            ),
        }
    }
}

/// c-blosc2's error codes: the name of each in `blosc2.h`'s `BLOSC2_ERROR_*`
/// enumeration (without the prefix) and what it says, in the words of that
/// enumeration's comments, so that a message names what failed, never a
/// bare number.
const BLOSC2_ERRORS: [(i32, &str, &str); 36] = {
    use blosc2_sys as b;
    [
        (b::BLOSC2_ERROR_FAILURE, "FAILURE", "generic failure"),
        (b::BLOSC2_ERROR_STREAM, "STREAM", "bad stream"),
        (b::BLOSC2_ERROR_DATA, "DATA", "invalid data"),
        (b::BLOSC2_ERROR_MEMORY_ALLOC, "MEMORY_ALLOC", "memory allocation failed"),
        (b::BLOSC2_ERROR_READ_BUFFER, "READ_BUFFER", "not enough bytes to read"),
        (b::BLOSC2_ERROR_WRITE_BUFFER, "WRITE_BUFFER", "not enough room to write"),
        (b::BLOSC2_ERROR_CODEC_SUPPORT, "CODEC_SUPPORT", "codec not supported"),
        (b::BLOSC2_ERROR_CODEC_PARAM, "CODEC_PARAM", "invalid parameter of the codec"),
        (b::BLOSC2_ERROR_CODEC_DICT, "CODEC_DICT", "codec dictionary error"),
        (b::BLOSC2_ERROR_VERSION_SUPPORT, "VERSION_SUPPORT", "format version not supported"),
        (b::BLOSC2_ERROR_INVALID_HEADER, "INVALID_HEADER", "invalid value in a header"),
        (b::BLOSC2_ERROR_INVALID_PARAM, "INVALID_PARAM", "invalid parameter"),
        (b::BLOSC2_ERROR_FILE_READ, "FILE_READ", "file read failure"),
        (b::BLOSC2_ERROR_FILE_WRITE, "FILE_WRITE", "file write failure"),
        (b::BLOSC2_ERROR_FILE_OPEN, "FILE_OPEN", "file open failure"),
        (b::BLOSC2_ERROR_NOT_FOUND, "NOT_FOUND", "not found"),
        (b::BLOSC2_ERROR_RUN_LENGTH, "RUN_LENGTH", "bad run-length encoding"),
        (b::BLOSC2_ERROR_FILTER_PIPELINE, "FILTER_PIPELINE", "a filter of the pipeline failed or is not available"),
        (b::BLOSC2_ERROR_CHUNK_INSERT, "CHUNK_INSERT", "chunk insertion failed"),
        (b::BLOSC2_ERROR_CHUNK_APPEND, "CHUNK_APPEND", "chunk append failed"),
        (b::BLOSC2_ERROR_CHUNK_UPDATE, "CHUNK_UPDATE", "chunk update failed"),
        (b::BLOSC2_ERROR_2GB_LIMIT, "2GB_LIMIT", "sizes over 2 GB are not supported"),
        (b::BLOSC2_ERROR_SCHUNK_COPY, "SCHUNK_COPY", "super-chunk copy failed"),
        (b::BLOSC2_ERROR_FRAME_TYPE, "FRAME_TYPE", "wrong type of frame"),
        (b::BLOSC2_ERROR_FILE_TRUNCATE, "FILE_TRUNCATE", "file truncation failed"),
        (b::BLOSC2_ERROR_THREAD_CREATE, "THREAD_CREATE", "a thread or thread context could not be created"),
        (b::BLOSC2_ERROR_POSTFILTER, "POSTFILTER", "postfilter failure"),
        (b::BLOSC2_ERROR_FRAME_SPECIAL, "FRAME_SPECIAL", "special frame failure"),
        (b::BLOSC2_ERROR_SCHUNK_SPECIAL, "SCHUNK_SPECIAL", "special super-chunk failure"),
        (b::BLOSC2_ERROR_PLUGIN_IO, "PLUGIN_IO", "I/O plugin error"),
        (b::BLOSC2_ERROR_FILE_REMOVE, "FILE_REMOVE", "file removal failed"),
        (b::BLOSC2_ERROR_NULL_POINTER, "NULL_POINTER", "a pointer is null"),
        (b::BLOSC2_ERROR_INVALID_INDEX, "INVALID_INDEX", "invalid index"),
        (b::BLOSC2_ERROR_METALAYER_NOT_FOUND, "METALAYER_NOT_FOUND", "metalayer not found"),
        (b::BLOSC2_ERROR_MAX_BUFSIZE_EXCEEDED, "MAX_BUFSIZE_EXCEEDED", "maximum buffer size exceeded"),
        (b::BLOSC2_ERROR_TUNER, "TUNER", "tuner failure"),
    ]
};

/// The name (`FILTER_PIPELINE`) and description of c-blosc2 error `code`.
fn blosc2_error_name(code: i32) -> Option<(&'static str, &'static str)> {
    BLOSC2_ERRORS.iter().find(|(c, ..)| *c == code).map(|&(_, name, words)| (name, words))
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind() {
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::Blosc => "blosc2 failed",
            // Kept as caterva 0.5's callers read it ("invalid storage: '/x' does not exist").
            ErrorKind::InvalidStorage | ErrorKind::NotFound => "invalid storage",
            ErrorKind::NullPointer => "null pointer",
            ErrorKind::InvalidFormat => "invalid format",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Io => "i/o error",
            ErrorKind::InvalidIndex => "invalid index",
            ErrorKind::Corrupt => "corrupt data",
            ErrorKind::Changed => "changed",
        };
        write!(f, "{kind}: {}", Reason(self))
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::io("i/o", None, &e)
    }
}

/// `return Err(Error::InvalidArgument(format!(...)))` in one line.
macro_rules! invalid {
    ($($arg:tt)*) => { return Err($crate::error::Error::InvalidArgument(format!($($arg)*))) };
}
pub(crate) use invalid;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blosc2_errors_are_named_in_words() {
        // Every code of the enumeration, -1 to -36, once.
        let mut codes: Vec<i32> = BLOSC2_ERRORS.iter().map(|e| e.0).collect();
        codes.sort_unstable();
        assert_eq!(codes, (-36..=-1).collect::<Vec<_>>());
        let e = Error::blosc("compressing chunk 3", -18);
        assert_eq!(
            e.to_string(),
            "blosc2 failed: compressing chunk 3 failed: a filter of the pipeline failed or is not available \
             (c-blosc2's BLOSC2_ERROR_FILTER_PIPELINE)"
        );
        assert!(Error::blosc("x", -9)
            .to_string()
            .contains("codec dictionary error (c-blosc2's BLOSC2_ERROR_CODEC_DICT)"));
        assert_eq!(Error::blosc("x", None).to_string(), "blosc2 failed: x failed");
        let unknown = Error::blosc("x", -1000).to_string();
        assert!(unknown.contains("an error it does not name (code -1000)"), "{unknown}");
        assert!(!Error::blosc("x", -5).to_string().contains("-5"));
    }
}
