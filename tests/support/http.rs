//! Plain HTTP/1.1 probes for tests, std only: the status code of a GET on loopback.

use std::io::{Read, Write};
use std::time::Duration;

/// The status code of `GET http://127.0.0.1:<port><path>`.
pub fn http_status(port: u16, path: &str) -> Result<u16, String> {
    let timeout = Duration::from_secs(2);
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream =
        std::net::TcpStream::connect_timeout(&address, timeout).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(|e| e.to_string())?;
    response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {response:?}"))
}
