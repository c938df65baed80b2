//! Plain HTTP/1.1 for tests, std only: a GET on loopback, and a port to serve on.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// How long a GET waits to connect, and for each read and write, unless told otherwise.
pub const TIMEOUT: Duration = Duration::from_secs(3);

/// One answer: the status, the header block and the body (de-chunked).
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    head: String,
    pub body: String,
}

impl Response {
    /// The value of header `name` (case-insensitive), if the server sent it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head
            .lines()
            .skip(1)
            .filter_map(|line| line.split_once(':'))
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.trim())
    }
}

/// `GET http://<address><path>` with `Connection: close`.
pub fn get(address: SocketAddr, path: &str) -> Result<Response, String> {
    get_within(address, path, TIMEOUT)
}

/// [`get`] with `timeout` for connecting, writing and each read.
pub fn get_within(address: SocketAddr, path: &str, timeout: Duration) -> Result<Response, String> {
    let what = |e: std::io::Error| format!("GET http://{address}{path}: {e}");
    let mut stream = connect(address, timeout).map_err(what)?;
    stream
        .write_all(request_head(address, path, &[]).as_bytes())
        .map_err(what)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).map_err(what)?;
    parse_response(&response).map_err(|e| format!("GET http://{address}{path}: {e}"))
}

/// A TCP connection to `address` with `timeout` for connecting and for each read and
/// write.
pub fn connect(address: SocketAddr, timeout: Duration) -> std::io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    Ok(stream)
}

/// The head of `GET <path>` with `Connection: close` and `headers`.
pub fn request_head(address: SocketAddr, path: &str, headers: &[(&str, &str)]) -> String {
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    format!(
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nAccept: */*\r\n{extra}Connection: close\r\n\r\n"
    )
}

/// An HTTP/1.1 response read to the end of the connection, its body de-chunked.
pub fn parse_response(bytes: &[u8]) -> Result<Response, String> {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {text:?}"))?;
    let response = Response {
        status,
        head: head.to_string(),
        body: body.to_string(),
    };
    let chunked = response
        .header("transfer-encoding")
        .is_some_and(|value| value.eq_ignore_ascii_case("chunked"));
    Ok(match chunked {
        true => Response {
            body: dechunk(&response.body),
            ..response
        },
        false => response,
    })
}

/// The status of `GET http://127.0.0.1:<port><path>`.
pub fn status(port: u16, path: &str) -> Result<u16, String> {
    get(loopback(port), path).map(|response| response.status)
}

/// `127.0.0.1:<port>`.
pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A 127.0.0.1 address that was free a moment ago (bound, then released for the server
/// under test to take).
pub fn free_address() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port on 127.0.0.1")
}

/// The port of [`free_address`].
pub fn free_port() -> u16 {
    free_address().port()
}

/// Decodes a chunked body; stops at the last chunk or at anything malformed.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}
