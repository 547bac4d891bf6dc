//! What the HTTP tests' hand-written servers share: reading one HTTP/1.1 request.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;

/// The next request on `reader`: its head's lines (request line first) and its body
/// (`Content-Length` bytes); `None` once the client closes.
pub fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(Vec<String>, Vec<u8>)> {
    let (mut head, mut length) = (Vec::new(), 0usize);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        head.push(line.trim_end().to_owned());
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((head, body))
}
