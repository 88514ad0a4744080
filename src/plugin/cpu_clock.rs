//! The calling thread's CPU time: what the plugin's systems cost, without the time their thread
//! was preempted (hypervisor steal, other processes).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A reading of the calling thread's CPU clock (wall time where unavailable).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CpuClock(Duration);

static START: OnceLock<Instant> = OnceLock::new();

impl CpuClock {
    /// Now.
    pub(crate) fn now() -> Self {
        #[cfg(unix)]
        {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `ts` is a valid, writable timespec.
            if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
                return CpuClock(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
        }
        CpuClock(START.get_or_init(Instant::now).elapsed())
    }

    /// CPU time since this reading.
    pub(crate) fn elapsed(self) -> Duration {
        Self::now().0.saturating_sub(self.0)
    }
}
