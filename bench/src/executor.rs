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
