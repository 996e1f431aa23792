//! One error type for the whole crate, and its single mapping to the C codes.

use std::fmt;

/// The result type of every fallible operation in this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong. Each variant carries a human-readable reason that the C
/// layer prints when `CATERVA_TRACE` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// An argument (shape, partition, region, buffer size, name…) is invalid.
    InvalidArgument(String),
    /// c-blosc2 reported a failure (compression, I/O through a frame, …).
    BloscFailed(String),
    /// The storage description is invalid (bad path, wrong kind of file, …).
    InvalidStorage(String),
    /// A required pointer was NULL (only produced by the C layer).
    NullPointer(String),
    /// The data on disk or in a buffer is not a valid caterva array.
    InvalidFormat(String),
    /// An operating-system I/O error.
    Io(String),
    /// An index is out of range, or an axis cannot be squeezed
    /// (`CATERVA_ERR_INVALID_INDEX`, as the original reported these).
    InvalidIndex(String),
    /// Stored data fails its integrity check (a chunk whose checksum does
    /// not match, see [`crate::checksum`]).
    Corrupt(String),
}

impl Error {
    /// The caterva 0.5 error code of this error (`CATERVA_ERR_*`).
    #[must_use]
    pub fn code(&self) -> i32 {
        match self {
            Error::InvalidArgument(_) | Error::InvalidFormat(_) => crate::ffi::CATERVA_ERR_INVALID_ARGUMENT,
            Error::BloscFailed(_) | Error::Io(_) | Error::Corrupt(_) => crate::ffi::CATERVA_ERR_BLOSC_FAILED,
            Error::InvalidStorage(_) => crate::ffi::CATERVA_ERR_INVALID_STORAGE,
            Error::NullPointer(_) => crate::ffi::CATERVA_ERR_NULL_POINTER,
            Error::InvalidIndex(_) => crate::ffi::CATERVA_ERR_INVALID_INDEX,
        }
    }

    /// The reason, without the kind.
    #[must_use]
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidArgument(m)
            | Error::BloscFailed(m)
            | Error::InvalidStorage(m)
            | Error::NullPointer(m)
            | Error::InvalidFormat(m)
            | Error::Io(m)
            | Error::InvalidIndex(m)
            | Error::Corrupt(m) => m,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Error::InvalidArgument(_) => "invalid argument",
            Error::BloscFailed(_) => "blosc2 failed",
            Error::InvalidStorage(_) => "invalid storage",
            Error::NullPointer(_) => "null pointer",
            Error::InvalidFormat(_) => "invalid format",
            Error::Io(_) => "i/o error",
            Error::InvalidIndex(_) => "invalid index",
            Error::Corrupt(_) => "corrupt data",
        };
        write!(f, "{kind}: {}", self.message())
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

/// `return Err(Error::InvalidArgument(format!(...)))` in one line.
macro_rules! invalid {
    ($($arg:tt)*) => { return Err($crate::error::Error::InvalidArgument(format!($($arg)*))) };
}
pub(crate) use invalid;
