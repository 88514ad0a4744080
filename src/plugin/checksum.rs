//! The desync checksum of lockstep mode ([`NavChecksum`]; see
//! [`Lockstep`](crate::plugin::settings::Lockstep)): a hash of the navigation state after each
//! tick. It reads every unit, the queue and the requests, so it sits on top of the Bevy layer.

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;

use super::movement::state::{MoveState, PathProgress};
use super::movement::vehicle::DriveProgress;
use super::outcomes::NavPath;
use super::queue::path_queue::PathQueue;
use super::request::{PathStatus, PendingRequests};
use super::settings::TilepathSettings;
use super::unit_order::{LockstepKey, sort_key};

/// A hash of the navigation state after each tick in lockstep mode: every unit's position,
/// heading, move state, path and the link it is crossing, its request's status, and the
/// queue's contents. Send it
/// between clients (or write it into a replay) and compare: the first tick two clients'
/// checksums differ is the tick they desynced. Cheap: one pass over the units a tick. It
/// identifies units by their [`LockstepKey`] (their entity without one), so it matches between
/// clients whose entities differ only where every unit has a key. Left at its default outside
/// lockstep mode.
///
/// ```
/// use bevy::prelude::*;
/// use bevy_tilepath::prelude::*;
/// use bevy_tilepath::NavChecksum;
///
/// /// What a client sends its peers every tick, and checks theirs against.
/// fn send_checksum(checksum: Res<NavChecksum>) {
///     let (tick, value) = (checksum.tick, checksum.value);
///     // net.send(Message::Checksum { tick, value }); a peer whose value differs for the same
///     // tick has desynced.
///     let _ = (tick, value);
/// }
///
/// let mut app = App::new();
/// app.add_plugins((MinimalPlugins, TilepathPlugins::in_schedule(FixedUpdate)))
///     .insert_resource(TilepathSettings::lockstep())
///     .add_systems(FixedUpdate, send_checksum.after(TilepathSystems::Last));
/// app.update();
/// ```
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
#[reflect(Resource)]
pub struct NavChecksum {
    /// The tick hashed (the plugin's frame count: ticks of its schedule since it started).
    pub tick: u64,
    /// The hash.
    pub value: u64,
}

/// A 64-bit hash built from words (not `std`'s `Hasher`, whose output may change between Rust
/// releases: clients on different builds must agree).
#[derive(Clone, Copy)]
struct Fold(u64);

impl Fold {
    fn new(seed: u64) -> Self {
        Fold(seed ^ 0x243F_6A88_85A3_08D3)
    }

    fn u64(&mut self, v: u64) -> &mut Self {
        self.0 = (self.0 ^ v)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(31);
        self
    }

    fn f32(&mut self, v: f32) -> &mut Self {
        self.u64(v.to_bits() as u64)
    }

    fn vec2(&mut self, v: Vec2) -> &mut Self {
        self.f32(v.x).f32(v.y)
    }

    /// The finished hash (splitmix64's finaliser).
    fn finish(self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A move state as words.
fn move_state(h: &mut Fold, state: MoveState) {
    match state {
        MoveState::Idle => h.u64(0),
        MoveState::Moving => h.u64(1),
        MoveState::Waiting {
            seconds,
            through_from,
        } => h
            .u64(2)
            .f32(seconds)
            .vec2(through_from.unwrap_or(Vec2::NAN)),
        MoveState::WalkingThrough { from } => h.u64(3).vec2(from),
        MoveState::Arrived => h.u64(4),
    };
}

/// A path status as a word.
fn status_word(status: &PathStatus) -> u64 {
    match status {
        PathStatus::Idle => 0,
        PathStatus::Queued => 1,
        PathStatus::Searching => 2,
        PathStatus::Found => 3,
        PathStatus::Failed(f) => 16 + *f as u64,
        PathStatus::Cancelled => 4,
    }
}

/// The units the checksum hashes.
type Hashed<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        Option<&'static LockstepKey>,
        &'static Transform,
        &'static PathStatus,
        Option<&'static PathProgress>,
        Option<Ref<'static, NavPath>>,
        Option<&'static DriveProgress>,
    ),
>;

/// Each unit's path hash from the tick before, so a path is hashed again only when it changed
/// (a new path, or a rest patched in: [`PathQueue::patched`]): hashing every waypoint of every
/// path every tick took a fifth of the plugin's time with 4,000 units in lockstep mode.
#[derive(Default)]
pub(crate) struct PathHashes {
    now: EntityHashMap<u64>,
    before: EntityHashMap<u64>,
    /// Whether the last tick was in lockstep mode (hashes kept from before a pause are stale).
    on: bool,
}

/// A path's hash: its ticket, cost and every waypoint.
fn path_hash(path: &NavPath) -> u64 {
    let mut h = Fold::new(path.ticket);
    h.u64(path.cost).u64(path.waypoints.len() as u64);
    for w in &path.waypoints {
        h.vec2(*w);
    }
    h.finish()
}

/// End of a tick in lockstep mode: hashes the navigation state into [`NavChecksum`]. Units are
/// hashed one by one and summed, so the sum does not depend on the order they are visited in.
pub(crate) fn update_checksum(
    settings: Res<TilepathSettings>,
    book: Res<PendingRequests>,
    mut queue: ResMut<PathQueue>,
    units: Hashed,
    keys: Query<Option<&LockstepKey>>,
    mut checksum: ResMut<NavChecksum>,
    mut cache: Local<PathHashes>,
) {
    // Taken for the tick and given back emptied, so its memory is reused.
    let mut patched = std::mem::take(&mut queue.patched);
    if settings.lockstep.is_none() {
        cache.on = false;
        patched.clear();
        queue.patched = patched;
        return;
    }
    let PathHashes { now, before, on } = &mut *cache;
    if !std::mem::replace(on, true) {
        before.clear();
    }
    now.clear();
    let id = |e: Entity| {
        let k = keys.get(e).ok().flatten();
        let (keyless, v) = sort_key(e, k);
        v ^ ((keyless as u64) << 63)
    };
    let mut sum = 0u64;
    for (entity, key, transform, status, progress, path, drive) in &units {
        let (keyless, k) = sort_key(entity, key);
        let mut h = Fold::new(k ^ ((keyless as u64) << 63));
        h.vec2(transform.translation.truncate())
            .u64(status_word(status));
        if let Some(p) = progress {
            h.vec2(p.heading)
                .u64(p.waypoint as u64)
                .u64(p.cell_index as u64)
                .f32(p.speed_factor);
            move_state(&mut h, p.state);
            if let Some(c) = p.crossing {
                h.u64(u64::from(c.link.0)).f32(c.left);
            }
        }
        if let Some(d) = drive {
            h.u64(d.status as u64)
                .f32(d.along)
                .u64(d.plan.as_ref().map_or(0, |p| p.cost))
                .u64(d.leg_from as u64);
            if let Some(c) = d.stop_at {
                h.vec2(c.as_vec2());
            }
            if let Some(c) = d.crossing {
                h.u64(u64::from(c.link.0)).f32(c.left);
            }
        }
        if let Some(path) = path {
            let hash = match before.get(&entity) {
                Some(&hash) if !path.is_changed() && !patched.contains(&entity) => hash,
                _ => path_hash(&path),
            };
            debug_assert_eq!(hash, path_hash(&path), "a path changed unseen");
            now.insert(entity, hash);
            h.u64(hash);
        }
        sum = sum.wrapping_add(h.finish());
    }
    std::mem::swap(now, before);
    patched.clear();
    queue.patched = patched;
    let mut h = Fold::new(sum);
    h.u64(book.frame);
    queue.hash_into(|e, [a, b]| {
        h.u64(id(e)).u64(a).u64(b);
    });
    *checksum = NavChecksum {
        tick: book.frame,
        value: h.finish(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fold_hash_is_fixed() {
        // Clients on different builds must agree: the function is ours, and pinned here.
        let mut h = Fold::new(1);
        h.u64(2).f32(0.5).vec2(Vec2::new(-1.0, 3.25));
        assert_eq!(h.finish(), 0x73ca_e8a9_024d_10b4);
        let mut g = Fold::new(1);
        g.u64(2).f32(0.5).vec2(Vec2::new(-1.0, 3.25));
        assert_eq!(h.finish(), g.finish());
        let mut other = Fold::new(1);
        other.u64(2).f32(0.5).vec2(Vec2::new(-1.0, 3.5));
        assert_ne!(h.finish(), other.finish());
    }
}
