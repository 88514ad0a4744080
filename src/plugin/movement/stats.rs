//! What movement cost in the last frame, by phase, and how many units it moved: the price of
//! each crowd rule in the open.

use std::time::{Duration, Instant};

use bevy::prelude::*;

use crate::plugin::cpu_clock::CpuClock;

/// The last frame's figures of the movement systems ([`MovementPlugin`](crate::MovementPlugin)),
/// wall time by phase. Read them for your own HUD;
/// [`TilepathDiagnosticsPlugin`](crate::TilepathDiagnosticsPlugin) also publishes them.
#[derive(Resource, Clone, Debug, Default, Reflect)]
#[reflect(Resource)]
pub struct MovementFrameStats {
    /// Releasing the claims of units that lost their mover or their path, and putting the
    /// units in lockstep order (lockstep mode).
    pub release: Duration,
    /// Indexing the units by cell for local avoidance (zero with avoidance off).
    pub index: Duration,
    /// Each unit's frame: tracking its path, claims and intent, the crowd's decision, the step
    /// along its curve (with avoidance), arriving; standing units' checks.
    pub steps: Duration,
    /// The vehicles' frame ([`Vehicle`](crate::Vehicle)s): planning their drives (inline: the
    /// searches themselves; with workers, preparing them and taking their plans) and driving.
    pub vehicles: Duration,
    /// Pushing overlapping bodies apart (indexing every body, then the passes).
    pub push: Duration,
    /// Turning arrived units toward their facing.
    pub facing: Duration,
    /// Thread CPU time of all the movement systems: [`MovementFrameStats::total`]'s wall time
    /// less the time their thread was preempted (other processes, search workers on the same
    /// cores, a hypervisor's steal). Work a phase hands to other threads of the compute pool is
    /// not in it.
    pub cpu: Duration,
    /// Units on their way this frame (moving, waiting or walking through).
    pub moving: u32,
    /// Units standing (idle or arrived) this frame.
    pub standing: u32,
    /// Standing units that needed no work at all (asleep: nothing touched them since they
    /// last stood), of [`MovementFrameStats::standing`].
    pub asleep: u32,
}

impl MovementFrameStats {
    /// Wall time of all the movement systems.
    pub fn total(&self) -> Duration {
        self.release + self.index + self.steps + self.vehicles + self.push + self.facing
    }

    /// Mean wall time of the movement systems per unit (zero with no units).
    pub fn per_unit(&self) -> Duration {
        let units = self.moving + self.standing;
        if units == 0 {
            Duration::ZERO
        } else {
            self.total() / units
        }
    }
}

/// Times a phase of movement: `Stopwatch::start()`, then [`Stopwatch::lap`] into a field, and
/// [`Stopwatch::stop`] at the system's end (its last lap, and its thread CPU time for
/// [`MovementFrameStats::cpu`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stopwatch {
    lap: Instant,
    cpu: CpuClock,
}

impl Stopwatch {
    /// Starts timing.
    pub(crate) fn start() -> Self {
        Stopwatch {
            lap: Instant::now(),
            cpu: CpuClock::now(),
        }
    }

    /// The time since the last lap (or the start), and a new lap begun.
    pub(crate) fn lap(&mut self) -> Duration {
        let now = Instant::now();
        let lap = now - self.lap;
        self.lap = now;
        lap
    }

    /// Stops timing: the time since the last lap (or the start), and the thread CPU time since
    /// the start. The CPU clock is read first, so the stretch it measures lies within the wall
    /// clock's (started the other way round): a phase's CPU time is never more than its wall
    /// time however long the clocks take to read on a loaded machine.
    pub(crate) fn stop(self) -> (Duration, Duration) {
        let cpu = self.cpu.elapsed();
        (self.lap.elapsed(), cpu)
    }
}
