//! The load generator's executor: one thread runs every task and polls every socket.
//!
//! The client library's sockets are `async-net` streams, whose readiness comes from `async-io`'s
//! reactor. Under a tokio runtime that reactor runs on a thread of its own ("async-io"), so every
//! reply wakes that thread first and then, across threads, the tokio worker waiting for it: two
//! context switches per batch of replies, on the one CPU the generator is pinned to. Under
//! `async_io::block_on` the thread that runs the tasks polls the reactor itself whenever it has
//! nothing else to run, so a reply costs no hand-off between threads at all.
//!
//! The client spawns its session tasks through `spawns`; a thread-local spawner puts them on the
//! same executor as the workers.

use std::future::Future;
use std::time::Duration;

use async_executor::LocalExecutor;
use futures_lite::FutureExt;

struct Spawner<'a>(&'a LocalExecutor<'static>);

impl spawns::Spawn for Spawner<'_> {
    fn spawn(&self, task: spawns::Task) {
        self.0.spawn(Box::into_pin(task.future)).detach();
    }
}

/// Runs `main` and every task it spawns (through [`spawns::spawn`]) on this thread, until `main`
/// returns. Tasks still running then are dropped.
pub fn block_on<T>(main: impl Future<Output = T>) -> T {
    let executor = LocalExecutor::new();
    let spawner = Spawner(&executor);
    let _scope = spawns::enter(&spawner);
    async_io::block_on(executor.run(main))
}

/// `fut`'s output, or `None` if it has not finished within `limit`.
pub async fn timeout<T>(limit: Duration, fut: impl Future<Output = T>) -> Option<T> {
    async { Some(fut.await) }
        .or(async {
            async_io::Timer::after(limit).await;
            None
        })
        .await
}

/// Waits for `d`.
pub async fn sleep(d: Duration) {
    async_io::Timer::after(d).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn spawned_tasks_run_on_the_calling_thread() {
        let caller = std::thread::current().id();
        let ran_on = block_on(async {
            spawns::spawn(async { std::thread::current().id() })
                .await
                .expect("the task finished")
        });
        assert_eq!(ran_on, caller);
    }

    #[test]
    fn timeout_gives_up_on_a_pending_future_and_passes_a_ready_one() {
        let started = Instant::now();
        let never = block_on(timeout(
            Duration::from_millis(30),
            std::future::pending::<()>(),
        ));
        assert_eq!(never, None);
        assert!(started.elapsed() >= Duration::from_millis(30));
        assert_eq!(
            block_on(timeout(Duration::from_secs(5), async { 7 })),
            Some(7)
        );
    }

    #[test]
    fn sockets_are_served_while_main_waits() {
        // A reply travels through the reactor that `block_on` polls: the listener's accept and
        // the echo run as spawned tasks while `main` waits on its own read.
        let echoed = block_on(async {
            let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            spawns::spawn(async move {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 5];
                futures_lite::AsyncReadExt::read_exact(&mut conn, &mut buf)
                    .await
                    .unwrap();
                futures_lite::AsyncWriteExt::write_all(&mut conn, &buf)
                    .await
                    .unwrap();
            });
            let mut conn = async_net::TcpStream::connect(addr).await.unwrap();
            futures_lite::AsyncWriteExt::write_all(&mut conn, b"hello")
                .await
                .unwrap();
            let mut back = [0u8; 5];
            futures_lite::AsyncReadExt::read_exact(&mut conn, &mut back)
                .await
                .unwrap();
            back
        });
        assert_eq!(&echoed, b"hello");
    }
}
