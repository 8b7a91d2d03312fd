//! The seed corpus the fuzz harness mutates: valid requests of every shape
//! the issue names (pipelined, chunked with extensions and trailers,
//! `Expect: 100-continue`, absolute-form, HEAD, large headers), aimed at
//! real routes so the raw-socket pass reaches the handlers too.

/// A seed and whether it is large: large seeds cost tens of times more to
/// feed one byte at a time, so they are picked less often.
pub struct Seed {
    pub name: &'static str,
    pub bytes: Vec<u8>,
    pub large: bool,
}

/// Longest request line the core accepts (`MAX_REQUEST_LINE`, 8 KiB): a
/// seed exactly this long turns into 414 with any byte inserted into it.
const LONGEST_LINE: usize = 8 * 1024;
/// Most header fields the core accepts (`MAX_HEADERS`): a seed with this
/// many turns into 431 when a line is duplicated.
const MOST_FIELDS: usize = 100;

const SMALL: &[(&str, &[u8])] = &[
    ("get", b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
    (
        "get static",
        b"GET /500B.html HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: fuzz\r\nAccept: */*\r\n\r\n",
    ),
    (
        "http/1.0 keep-alive",
        b"GET /bytes/10 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    ),
    (
        "head",
        b"HEAD /500B.html HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n",
    ),
    (
        "absolute-form",
        b"GET http://example.com:8080/bytes/5?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n",
    ),
    ("options asterisk", b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"),
    (
        "post content-length",
        b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world",
    ),
    (
        "chunked extensions trailers",
        b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\
          5;a=b\r\nhello\r\n6 ; name=\"v a\"\r\n world\r\n0;last\r\nX-Trailer: 1\r\nX-Sum: abc\r\n\r\n",
    ),
    (
        "expect continue",
        b"PUT /files/fuzz.txt HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\ndata",
    ),
    (
        "expect continue chunked",
        b"POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n\
          3\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n",
    ),
    (
        "pipelined",
        b"GET /bytes/3 HTTP/1.1\r\nHost: a\r\n\r\n\
          POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc\
          POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n1;x\r\nf\r\n0\r\n\r\n\
          HEAD /500B.html HTTP/1.1\r\nHost: a\r\n\r\n\
          GET /files/ HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    ),
    (
        "pipelined then close",
        b"DELETE /files/fuzz.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n\
          GET /status/204 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n\
          GET /never HTTP/1.1\r\nHost: a\r\n\r\n",
    ),
    (
        "empty lines first",
        b"\r\n\r\nGET /?q=%20 HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
    ),
    (
        "bare lf",
        b"GET /bytes/1 HTTP/1.1\nHost: a\nConnection: keep-alive, Upgrade\n\n",
    ),
    (
        "later minor version",
        b"GET / HTTP/1.2\r\nHost: a\r\n\r\n",
    ),
];

/// The seeds, small ones first.
pub fn seeds() -> Vec<Seed> {
    let small = SMALL
        .iter()
        .map(|(name, bytes)| (*name, bytes.to_vec(), false));
    let large = [
        ("longest request line", longest_line()),
        ("most header fields", most_fields()),
        ("large header fields", large_fields()),
    ];
    small
        .chain(large.into_iter().map(|(name, bytes)| (name, bytes, true)))
        .map(|(name, bytes, large)| Seed { name, bytes, large })
        .collect()
}

fn longest_line() -> Vec<u8> {
    let mut line = b"GET /".to_vec();
    line.resize(LONGEST_LINE - b" HTTP/1.1".len(), b'a');
    line.extend_from_slice(b" HTTP/1.1\r\nHost: a\r\n\r\n");
    line
}

fn most_fields() -> Vec<u8> {
    let mut many = b"GET /500B.html HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 1..MOST_FIELDS {
        many.extend_from_slice(format!("X-{i}: v{i}\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    many
}

/// 8 KB of field values in four fields, and a body.
fn large_fields() -> Vec<u8> {
    let mut big = b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n".to_vec();
    for i in 0..4 {
        big.extend_from_slice(format!("X-Big-{i}: {}\r\n", "v".repeat(2000)).as_bytes());
    }
    big.extend_from_slice(b"\r\nok");
    big
}
