//! Integer socket options and queries that neither std nor socket2 offers
//! (TCP_DEFER_ACCEPT on listeners, the bytes waiting unread on a socket).

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

/// Bytes received on a socket and not yet read (FIONREAD); 0 if unknown.
pub fn unread(fd: BorrowedFd<'_>) -> u64 {
    let mut n: libc::c_int = 0;
    // SAFETY: fd is a live descriptor borrowed for the call, and FIONREAD
    // writes one c_int through the pointer, which points at `n`.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n as *mut libc::c_int) };
    if r == 0 {
        n.max(0) as u64
    } else {
        0
    }
}
