//! Integer socket options that neither std nor socket2 sets for us
//! (TCP_DEFER_ACCEPT on listeners).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// setsockopt with a c_int value.
pub fn set_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: fd is a live descriptor borrowed for the call, and the option
    // value is a c_int whose size is passed with it.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
