//! The response parser's tests: framing whole and byte by byte, the
//! remembered head, pausing, and the head limits at every split.

use super::*;

fn parse_all(bytes: &[u8], step: usize, head: bool) -> Vec<ResponseInfo> {
    let mut p = ResponseParser::new(head);
    let mut out = Vec::new();
    for piece in bytes.chunks(step) {
        let mut off = 0;
        while off < piece.len() {
            let (n, done) = p.feed(&piece[off..]).unwrap();
            off += n;
            out.extend(done);
        }
    }
    out.extend(p.feed_eof().unwrap());
    out
}

#[test]
fn frames_every_kind_whole_and_bytewise() {
    let stream = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\nT: 1\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.0 200 OK\r\n\r\nuntil close";
    for step in [stream.len(), 1, 7] {
        let r = parse_all(stream, step, false);
        let got: Vec<_> = r
            .iter()
            .map(|i| (i.status, i.body_bytes, i.keep_alive))
            .collect();
        assert_eq!(
            got,
            [
                (200, 5, true),
                (200, 3, true),
                (204, 0, true),
                (200, 11, false)
            ],
            "step {step}"
        );
    }
}

#[test]
fn head_responses_have_no_body_and_cut_bodies_are_errors() {
    let r = parse_all(b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n", 3, true);
    assert_eq!(r[0].body_bytes, 0);
    let mut p = ResponseParser::new(false);
    p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel")
        .unwrap();
    assert_eq!(p.feed_eof(), Err(ResponseError::Incomplete));
}

#[test]
fn a_remembered_head_means_what_parsing_it_would() {
    // Each response alone, through a fresh parser, then all in one
    // stream through one parser that remembers heads: heads that share
    // a prefix with the remembered one, or differ by one byte, must not
    // be taken for it.
    let a = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let longer = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
    let other_len = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
    let status = "HTTP/1.1 500 OK\r\nContent-Length: 5\r\n\r\nhello";
    let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n";
    let cont = "HTTP/1.1 100 Continue\r\n\r\n";
    let sequence = [
        a, a, longer, a, other_len, a, status, chunked, chunked, cont, a, a,
    ];
    let mut alone = Vec::new();
    let mut i = 0;
    while i < sequence.len() {
        // An interim head belongs to the response after it.
        let one = if sequence[i] == cont {
            i += 1;
            format!("{cont}{}", sequence[i])
        } else {
            sequence[i].to_string()
        };
        alone.extend(parse_all(one.as_bytes(), one.len(), false));
        i += 1;
    }
    let stream = sequence.concat();
    assert_eq!(parse_all(stream.as_bytes(), stream.len(), false), alone);
    assert_eq!(alone.len(), 11);
    assert!(!alone[2].keep_alive && alone[4].body_bytes == 3 && alone[5].status == 200);
}

#[test]
fn a_paused_parser_stops_at_the_head_and_hands_out_the_body() {
    let stream = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    for step in [stream.len(), 1, 5] {
        let mut p = ResponseParser::new(false);
        p.pause_after_head(true);
        let (mut heads, mut body, mut done) = (Vec::new(), Vec::new(), Vec::new());
        for piece in stream.chunks(step) {
            let mut off = 0;
            while off < piece.len() {
                let (n, end) = p
                    .feed_with(&piece[off..], |b| body.extend_from_slice(b))
                    .unwrap();
                off += n;
                if let Some(info) = end {
                    done.push(info.status);
                    body.push(b'|');
                } else if heads.len() == done.len() {
                    // The first sight of a head: none of its body yet.
                    heads.extend(p.in_body().map(|(s, len)| (s, len, body.len())));
                }
            }
        }
        assert_eq!(heads, [(200, None, 0), (201, Some(2), 6)], "step {step}");
        assert_eq!(body, b"abcde|ok|", "step {step}");
        assert_eq!(done, [200, 201]);
    }
}

/// Feeds `bytes` in two reads split at `at`; the first error, if any.
fn split_outcome(bytes: &[u8], at: usize) -> Result<(), ResponseError> {
    let mut p = ResponseParser::new(false);
    for piece in [&bytes[..at], &bytes[at..]] {
        let mut off = 0;
        while off < piece.len() {
            let (n, done) = p.feed(&piece[off..])?;
            off += n;
            if done.is_some() {
                return Ok(());
            }
        }
    }
    p.feed_eof().map(|_| ())
}

fn head_with(fields: usize, value_len: usize) -> Vec<u8> {
    let mut h = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..fields {
        h.extend_from_slice(format!("X-F{i}: {}\r\n", "v".repeat(value_len)).as_bytes());
    }
    h.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    h
}

#[test]
fn regression_an_oversized_head_was_classified_by_where_reads_split() {
    // Too many fields, too many bytes, both, and a malformed one: each
    // gets one kind at every split (the large ones at a stride, and at
    // every offset around the byte limit).
    let bad = {
        let mut h = head_with(200, 300);
        h[20_000] = 0;
        h
    };
    let cases = [
        (head_with(300, 8), ResponseError::HeadTooLarge),
        (
            head_with(MAX_RESPONSE_HEADERS, 8),
            ResponseError::HeadTooLarge,
        ),
        (head_with(100, 700), ResponseError::HeadTooLarge),
        (head_with(400, 200), ResponseError::HeadTooLarge),
        (bad, ResponseError::BadHead),
    ];
    for (i, (bytes, want)) in cases.iter().enumerate() {
        let near = MAX_HEADER_BYTES.saturating_sub(40)..MAX_HEADER_BYTES + 40;
        let stride = if bytes.len() > 10_000 { 97 } else { 1 };
        let splits = (0..=bytes.len())
            .step_by(stride)
            .chain(near.filter(|&a| a <= bytes.len()));
        for at in splits {
            assert_eq!(split_outcome(bytes, at), Err(*want), "case {i}, split {at}");
        }
    }
}

#[test]
fn regression_responses_with_over_100_header_fields_failed() {
    // The response limit is its own (the server's request limit is
    // 100); a head of exactly the limit's fields passes at any split.
    let fields = MAX_RESPONSE_HEADERS - 1; // Content-Length is one more.
    let ok = head_with(fields, 8);
    for at in 0..=ok.len() {
        assert_eq!(split_outcome(&ok, at), Ok(()), "split {at}");
    }
    const { assert!(MAX_RESPONSE_HEADERS >= 256) };
}

#[test]
fn a_remembered_head_still_yields_the_server_when_asked() {
    let one = b"HTTP/1.1 200 OK\r\nServer: s1\r\nContent-Length: 0\r\n\r\n";
    let mut p = ResponseParser::new(false);
    assert_eq!(p.feed(one).unwrap().1.unwrap().server, None);
    p.capture_server(true);
    let info = p.feed(one).unwrap().1.unwrap();
    assert_eq!(info.server.as_deref(), Some("s1"));
}
