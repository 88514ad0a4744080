//! What the examples share: one command-line parser (the `lexopt` crate, with the helpers
//! below), one deterministic random number generator, one percentile and one thread CPU clock.
//! Included with `#[path = ...] mod common;` by each example.

#![allow(dead_code)] // each example uses part of it

use std::str::FromStr;
use std::time::Duration;

pub mod battle;
#[cfg(feature = "serialize")]
pub mod saved_game;

/// A body touching a wall may overlap it by float rounding (a segment at exactly the body's
/// radius from a wall corner, sampled): overlaps up to this many tiles are touching.
pub const TOUCH: f32 = 1e-3;

/// Whether a body of `radius` at `p` (grid space) is over a blocked cell of `grid`, by more
/// than [`TOUCH`]: what every runner counts as a body in a wall.
pub fn in_wall(grid: &bevy_tilepath::core::NavGrid, p: bevy::math::Vec2, radius: f32) -> bool {
    bevy_tilepath::core::overlaps_blocked(grid, p, radius - TOUCH)
}

/// Bevy's minimal plugins with the task pools given `threads` threads in all (0: Bevy's
/// default, as many as the machine has cores). Bevy gives the compute pool what is left after
/// one I/O and one async compute thread, so on two cores its default is one compute thread;
/// `threads = 4` gives it two there.
pub fn minimal_plugins(threads: usize) -> impl bevy::app::PluginGroup {
    use bevy::app::{PluginGroup, TaskPoolOptions, TaskPoolPlugin};
    let task_pool_options = if threads == 0 {
        TaskPoolOptions::default()
    } else {
        TaskPoolOptions::with_num_threads(threads)
    };
    bevy::MinimalPlugins.set(TaskPoolPlugin { task_pool_options })
}

/// The calling thread's CPU time (wall time where there is no thread clock): what a runner's
/// own work costs, measured as the plugin's systems are
/// (`TilepathFrameStats::main_thread_cpu`), without the time the thread was preempted.
pub fn thread_cpu() -> Duration {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
        }
    }
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}

/// A small deterministic generator (xorshift64*): the same seed gives the same maps and orders
/// on every machine and every version of the examples' dependencies.
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 if `n` is 0).
    pub fn below(&mut self, n: u32) -> u32 {
        (self.next_u64() % n.max(1) as u64) as u32
    }

    /// A number in `0.0..1.0`.
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// The value of option `name` parsed as `T`, or an error naming the option.
pub fn value<T: FromStr>(parser: &mut lexopt::Parser, name: &str) -> Result<T, String> {
    let raw = parser
        .value()
        .map_err(|e| format!("{name}: {e}"))?
        .into_string()
        .map_err(|v| format!("{name}: not text: {v:?}"))?;
    raw.parse()
        .map_err(|_| format!("{name}: bad value {raw:?}"))
}

/// The error for an argument the example does not take.
pub fn unexpected(arg: lexopt::Arg) -> String {
    arg.unexpected().to_string()
}

/// The `p` percentile of `v` (nearest rank, `p` in 0..=1; 0 for no values).
pub fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(((s.len() as f64 * p).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(0.0)
}

/// Watches the crowd frame by frame (see [`CrowdWatch::frame`]); keeps where each unit stood
/// in the frame before.
#[derive(Default)]
pub struct CrowdWatch {
    last: bevy::platform::collections::HashMap<bevy::prelude::Entity, bevy::prelude::Vec2>,
}

/// A unit moving faster than this many times its [`Mover`](bevy_tilepath::Mover)'s speed from
/// one frame to the next counts as fast (walking and pushed at once, say); moving more than
/// [`JUMP`] tiles, as a jump (a body that leaps, as no walk or push should make it).
const FAST: f32 = 1.5;
/// See [`FAST`].
const JUMP: f32 = 0.5;

impl CrowdWatch {
    /// The crowd in one frame, on the world's only [`NavMap`](bevy_tilepath::NavMap): how many
    /// units' bodies overlap another's by more than a fifth of the sum of their radii
    /// (`overlapping`), how many walk through other units (`walking_through`, the crowd's last
    /// resort), how many moved fast or jumped since the frame before (see [`FAST`]) and the
    /// fastest move, and how many units there are (`units`); of the [`Vehicle`]s
    /// (`vehicles`), how many overlap another vehicle so (`vehicles_overlapping`: a vehicle
    /// driving is never pushed, so these are mostly bodies driven through each other).
    /// Neighbours come from a hash of the units' cells, not a scan of every pair.
    ///
    /// [`Vehicle`]: bevy_tilepath::Vehicle
    pub fn frame(&mut self, world: &mut bevy::prelude::World) -> CrowdFrame {
        use bevy::prelude::*;
        use bevy_tilepath::{MoveState, Mover, NavAgent, NavMap, PathProgress, Vehicle};
        let Ok(map) = world.query::<&NavMap>().single(world).cloned() else {
            return CrowdFrame::default();
        };
        let dt = world.resource::<Time>().delta_secs();
        let mut q = world.query::<(
            Entity,
            &Transform,
            &NavAgent,
            &PathProgress,
            Option<&Mover>,
            Has<Vehicle>,
        )>();
        let mut frame = CrowdFrame::default();
        // Where each body is, its radius, whether it walks through others, whether a vehicle.
        let mut bodies: Vec<(Vec2, f32, bool, bool)> = Vec::new();
        for (entity, tf, agent, p, mover, vehicle) in q.iter(world) {
            let at = map.world_to_grid(tf.translation.truncate());
            if let Some(before) = self.last.insert(entity, at)
                && dt > 0.0
            {
                let moved = before.distance(at);
                frame.max_speed = frame.max_speed.max(moved / dt);
                let speed = mover.map_or(0.0, |m| m.speed);
                frame.fast += u64::from(moved > FAST * speed * dt);
                frame.jumps += u64::from(moved > JUMP);
            }
            let through = matches!(p.state, MoveState::WalkingThrough { .. });
            bodies.push((at, agent.radius, through, vehicle));
        }
        let mut cells: bevy::platform::collections::HashMap<IVec2, Vec<usize>> = Default::default();
        for (i, b) in bodies.iter().enumerate() {
            cells.entry(b.0.floor().as_ivec2()).or_default().push(i);
        }
        let reach = bodies.iter().map(|b| b.1).fold(0.0f32, f32::max) * 2.0;
        let reach = reach.ceil() as i32;
        frame.units = bodies.len() as u64;
        for (i, &(p, r, through, vehicle)) in bodies.iter().enumerate() {
            frame.walking_through += u64::from(through);
            frame.vehicles += u64::from(vehicle);
            let c = p.floor().as_ivec2();
            // Whether it overlaps another body (of a vehicle only, with `vehicles_only`).
            let overlaps = |vehicles_only: bool| {
                (-reach..=reach).any(|dy| {
                    (-reach..=reach).any(|dx| {
                        cells.get(&(c + IVec2::new(dx, dy))).is_some_and(|near| {
                            near.iter().any(|&j| {
                                let (q, s, _, other_vehicle) = bodies[j];
                                j != i
                                    && (other_vehicle || !vehicles_only)
                                    && p.distance(q) < 0.8 * (r + s)
                            })
                        })
                    })
                })
            };
            frame.overlapping += u64::from(overlaps(false));
            frame.vehicles_overlapping += u64::from(vehicle && overlaps(true));
        }
        frame
    }
}

/// See [`CrowdWatch::frame`]; summed over frames, counts are unit-frames (and the speed the
/// fastest of all).
#[derive(Clone, Copy, Debug, Default)]
pub struct CrowdFrame {
    pub units: u64,
    pub overlapping: u64,
    pub walking_through: u64,
    pub fast: u64,
    pub jumps: u64,
    /// Tiles per second.
    pub max_speed: f32,
    pub vehicles: u64,
    pub vehicles_overlapping: u64,
}

impl std::ops::AddAssign for CrowdFrame {
    fn add_assign(&mut self, o: Self) {
        self.units += o.units;
        self.overlapping += o.overlapping;
        self.walking_through += o.walking_through;
        self.fast += o.fast;
        self.jumps += o.jumps;
        self.max_speed = self.max_speed.max(o.max_speed);
        self.vehicles += o.vehicles;
        self.vehicles_overlapping += o.vehicles_overlapping;
    }
}

impl std::fmt::Display for CrowdFrame {
    /// `unit_overlaps=<n> (<%>) walk_through_frames=<n> (<%>) max_unit_speed=<tiles/s>
    /// fast_unit_frames=<n> jump_frames=<n> unit_frames=<n>`, and with vehicles
    /// `vehicle_overlaps=<n> (<% of vehicle_frames>) vehicle_frames=<n>`.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let pct = |n: u64| 100.0 * n as f64 / self.units.max(1) as f64;
        write!(
            f,
            "unit_overlaps={} ({:.2}%) walk_through_frames={} ({:.3}%) max_unit_speed={:.1} fast_unit_frames={} jump_frames={} unit_frames={}",
            self.overlapping,
            pct(self.overlapping),
            self.walking_through,
            pct(self.walking_through),
            self.max_speed,
            self.fast,
            self.jumps,
            self.units
        )?;
        if self.vehicles > 0 {
            write!(
                f,
                " vehicle_overlaps={} ({:.2}%) vehicle_frames={}",
                self.vehicles_overlapping,
                100.0 * self.vehicles_overlapping as f64 / self.vehicles as f64,
                self.vehicles
            )?;
        }
        Ok(())
    }
}

/// Updates `app` until the plugin's region maps, built on a thread, are done (at most `max`
/// frames), with the game's clock paused; returns the frames it took. Outside lockstep mode a
/// region map is used from the frame its thread finished it, so a run that must repeat exactly
/// on one machine, however loaded, waits for it before its first requests (the game's timers
/// do not see the frames waited). Not for lockstep mode: a tick never comes while the clock is
/// paused, and the maps are due at a fixed tick there anyway.
pub fn wait_for_region_maps(app: &mut bevy::app::App, max: usize) -> usize {
    use bevy::time::{Time, Virtual};
    let building = |app: &bevy::app::App| {
        app.world()
            .resource::<bevy_tilepath::TilepathFrameStats>()
            .region_maps_building
    };
    app.world_mut().resource_mut::<Time<Virtual>>().pause();
    let mut waited = 0;
    while waited < max && building(app) > 0 {
        app.update();
        waited += 1;
    }
    app.world_mut().resource_mut::<Time<Virtual>>().unpause();
    waited
}

/// The process's resident memory in bytes (0 where `/proc` is not there).
pub fn resident_bytes() -> u64 {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}
