//! ab's remaining flags, each against a real server on 127.0.0.1 and,
//! where the output is ab's, beside real ab: HTML tables (-w -x -y -z),
//! -d, -S, -V, -v, a proxy (-X -P, http and https), the local address
//! (-B), socket buffers (-b), a client certificate (-E), and the one-line
//! refusal of the ab flags loadlab lacks.

mod client;
mod proxy;
mod report;
mod verbose;
