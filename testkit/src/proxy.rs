//! A TCP proxy on 127.0.0.1 that adds latency, for benchmarks: what a client sends reaches the
//! server `delay` later, bytes in order, so every HTTP request costs one extra `delay` however
//! the client frames, pipelines or reuses connections. Responses pass straight back (the delay
//! stands for a whole round trip). Connection set-up is not delayed: clients keep connections
//! alive, as karpdoctor's and the CLIs' HTTP stacks do.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A running proxy; dropping it stops it (connections already open are closed with it).
pub struct LatencyProxy {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LatencyProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LatencyProxy {
    /// Listens on a free 127.0.0.1 port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr, delay: Duration) -> std::io::Result<LatencyProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                connections.spawn(relay(client, upstream, delay));
            }
        });
        Ok(LatencyProxy { addr, task })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

async fn relay(client: TcpStream, upstream: SocketAddr, delay: Duration) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();

    // Client to server: each chunk is stamped when it arrives and written `delay` after that,
    // so chunks of one request overlap their waits instead of adding up.
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    };
    let writer = async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if server_write.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = server_write.shutdown().await;
    };
    let back = async move {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    };
    tokio::join!(reader, writer, back);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_request_arrives_one_delay_late_and_intact() -> std::io::Result<()> {
        // An echo server stands in for an API.
        let echo = TcpListener::bind(("127.0.0.1", 0)).await?;
        let upstream = echo.local_addr()?;
        tokio::spawn(async move {
            while let Ok((mut s, _)) = echo.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        let delay = Duration::from_millis(40);
        let proxy = LatencyProxy::start(upstream, delay).await?;
        let mut conn = TcpStream::connect(proxy.addr).await?;
        for round in 0..3u8 {
            let started = std::time::Instant::now();
            let request = [round; 1000];
            conn.write_all(&request).await?;
            let mut answer = [0u8; 1000];
            conn.read_exact(&mut answer).await?;
            let took = started.elapsed();
            assert_eq!(answer, request);
            // The lower bound only: an upper one would time the machine, not the proxy.
            assert!(took >= delay, "round {round} took {took:?}");
        }
        Ok(())
    }
}
