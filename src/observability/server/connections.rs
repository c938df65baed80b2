//! Accepting and serving connections so that the port holds under abuse.
//!
//! Each bound below is what keeps one misbehaving client from taking the port from the
//! kubelet's probes and Prometheus:
//!
//! | what | bound | past it |
//! |---|---|---|
//! | open connections | [`Limits::max_connections`] | no more are accepted until one closes (they wait in the kernel's backlog) |
//! | TLS handshake | [`Limits::handshake_timeout`] | the connection is closed |
//! | request line and headers | [`Limits::header_timeout`], also the idle time between requests on a kept-alive connection | the connection is closed |
//! | header size | [`Limits::max_header_bytes`] | 431, then closed |
//! | writing an answer the peer does not read | [`Limits::stall_timeout`] without progress | the connection is closed |
//! | request body | [`Limits::max_body_bytes`] (the endpoints take none) | 413, then closed |
//!
//! Malformed requests are hyper's to answer (400 and close); a TLS handshake that fails
//! closes the connection. "Closed" after an answer means closed gracefully: we stop
//! writing and read what the client still sends for up to a second, so that its kernel
//! gets our answer rather than a reset (see [`linger`]). Nothing a client sends can
//! panic the server: the parser never panics, and a handler that did would end its own
//! connection's task only.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use hyper::service::{Service as _, service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Sleep;
use tracing::debug;

/// The bounds on connections and requests (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_connections: usize,
    pub handshake_timeout: Duration,
    pub header_timeout: Duration,
    pub stall_timeout: Duration,
    pub max_header_bytes: usize,
    pub max_body_bytes: u64,
}

impl Default for Limits {
    /// kube-scheduler's secure port allows 32 s for headers, 1 MiB of them and 90 s of
    /// idling; a metrics port needs far less, and smaller bounds free a slot sooner.
    fn default() -> Self {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            handshake_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(10),
            stall_timeout: Duration::from_secs(10),
            max_header_bytes: 64 * 1024,
            max_body_bytes: 4 * 1024,
        }
    }
}

/// Default of `berth run --metrics-max-connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// How long connections still open at shutdown get to finish their requests.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves `app` on `listener` (over TLS with `tls`) until `shutdown` turns true; then
/// stops accepting, lets open connections finish their requests (at most
/// [`DRAIN_TIMEOUT`]) and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: Limits,
    mut shutdown: watch::Receiver<bool>,
) -> io::Result<()> {
    let app = super::bounded_body(app, limits.max_body_bytes);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let mut connections = JoinSet::new();
    loop {
        // A slot first: past the limit, connections wait in the backlog, unaccepted.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            _ = stopped(&mut shutdown) => break,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped(&mut shutdown) => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: pause rather than spin.
                debug!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let acceptor = acceptor.clone();
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            let _slot = slot;
            let stream = Deadlines::new(stream, limits.stall_timeout);
            let result = match acceptor {
                Some(acceptor) => {
                    match tokio::time::timeout(limits.handshake_timeout, acceptor.accept(stream))
                        .await
                    {
                        Ok(Ok(tls)) => serve_connection(tls, app, limits, shutdown).await,
                        Ok(Err(error)) => Err(error.to_string()),
                        Err(_) => Err("TLS handshake timed out".to_string()),
                    }
                }
                None => serve_connection(stream, app, limits, shutdown).await,
            };
            if let Err(error) = result {
                debug!(%peer, %error, "connection ended");
            }
        });
    }
    drop(listener);
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(DRAIN_TIMEOUT, drain).await.is_err() {
        connections.abort_all();
    }
    Ok(())
}

/// One connection's HTTP/1.1 requests, ended gracefully when `shutdown` turns true,
/// then closed with [`linger`].
async fn serve_connection<S>(
    stream: S,
    app: Router,
    limits: Limits,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // Boxed futures make the connection Unpin, so it can hand its stream back.
    let service = TowerToHyperService::new(app);
    let service = service_fn(move |request| Box::pin(service.call(request)));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192) + 8192)
        .max_header_size(limits.max_header_bytes)
        .keep_alive(true);
    let mut connection = builder.serve_connection(TokioIo::new(stream), service);
    let result = tokio::select! {
        result = poll_fn(|cx| connection.poll_without_shutdown(cx)) => result,
        _ = stopped(&mut shutdown) => {
            Pin::new(&mut connection).graceful_shutdown();
            poll_fn(|cx| connection.poll_without_shutdown(cx)).await
        }
    };
    linger(connection.into_parts().io.into_inner()).await;
    result.map_err(|e| e.to_string())
}

/// How long a closing connection keeps reading what the peer still sends.
const LINGER: Duration = Duration::from_secs(1);

/// Closes our side, then reads and drops what the peer still sends until it closes too
/// (at most [`LINGER`]). Closing a socket with unread bytes makes the kernel send a reset,
/// and a reset makes the peer's kernel drop the answer it has not read yet: without this,
/// a client whose headers were too large (431) or whose body was refused (413) would
/// often see a reset instead of the answer. Go's net/http does the same.
async fn linger<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) {
    let drain = async {
        if stream.shutdown().await.is_err() {
            return;
        }
        let mut buffer = [0u8; 4096];
        while let Ok(1..) = stream.read(&mut buffer).await {}
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// Resolves once `shutdown` turns true (or its sender is gone).
pub async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// A TCP stream whose writes fail with `TimedOut` once they have waited `stall` without
/// progress: a peer that stops reading our answers frees its slot. (Reads need no such
/// bound: a request is headers only, and hyper's header timeout bounds those.)
pub struct Deadlines<S> {
    stream: S,
    stall: Duration,
    write_deadline: Option<Pin<Box<Sleep>>>,
}

impl<S> Deadlines<S> {
    pub fn new(stream: S, stall: Duration) -> Deadlines<S> {
        Deadlines {
            stream,
            stall,
            write_deadline: None,
        }
    }
}

/// Polls `deadline` for a stalled operation: arms it on the first stall, clears it on
/// progress.
fn stalled<T>(
    polled: Poll<io::Result<T>>,
    deadline: &mut Option<Pin<Box<Sleep>>>,
    stall: Duration,
    cx: &mut Context<'_>,
) -> Poll<io::Result<T>> {
    match polled {
        Poll::Ready(result) => {
            *deadline = None;
            Poll::Ready(result)
        }
        Poll::Pending => {
            let sleep = deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
            ready!(sleep.as_mut().poll(cx));
            *deadline = None;
            Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no progress within the stall timeout",
            )))
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Deadlines<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Deadlines<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        stalled(polled, &mut this.write_deadline, this.stall, cx)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_flush(cx);
        stalled(polled, &mut this.write_deadline, this.stall, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_shutdown(cx);
        stalled(polled, &mut this.write_deadline, this.stall, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_never_reads_fails_after_the_stall_timeout() {
        let (ours, _theirs) = tokio::io::duplex(64);
        let mut stream = Deadlines::new(ours, Duration::from_secs(10));
        let started = tokio::time::Instant::now();
        let error = stream
            .write_all(&[b'x'; 1024])
            .await
            .expect_err("the peer reads nothing");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_that_keeps_reading_is_not_cut_off() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let mut stream = Deadlines::new(ours, Duration::from_secs(10));
        let reader = tokio::spawn(async move {
            let mut buffer = [0u8; 64];
            let mut total = 0;
            while total < 1024 {
                tokio::time::sleep(Duration::from_secs(5)).await;
                total += tokio::io::AsyncReadExt::read(&mut theirs, &mut buffer)
                    .await
                    .expect("read");
            }
            total
        });
        stream
            .write_all(&[b'x'; 1024])
            .await
            .expect("each 64 bytes move within 10 s");
        assert_eq!(reader.await.expect("reader"), 1024);
    }
}
