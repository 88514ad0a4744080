//! Saved games: what of the plugin's state a saved game holds, and how a loaded game carries on.
//!
//! A game saves through reflection (Bevy's `DynamicWorld`, or any reflection-based saver) and
//! the plugin's components are saved as they are: [`PathRequest`], [`PathStatus`],
//! [`NavPath`], [`PathProgress`], [`Mover`](crate::Mover), [`NavAgent`], [`UnitClass`],
//! [`PlayerId`], [`HeldKeys`], [`Sight`](crate::Sight), [`LockstepKey`](crate::LockstepKey),
//! [`DesiredVelocity`](crate::DesiredVelocity), [`OrderQueue`](crate::OrderQueue),
//! [`HoldPosition`](crate::HoldPosition), and, with the `serialize` feature,
//! [`NavMap`](crate::NavMap). What the plugin keeps in its resources is not: requests owed an
//! outcome, rests of paths still to smooth. [`save_with`] writes those onto the units, as a
//! [`SavedNav`], for the length of the save. Loading queues the requests owed an outcome again
//! at once (each still ends in exactly one outcome; answered ones are not searched again, and
//! orders the game gives the loaded units right away are new requests as always); the plugin's
//! next frame lets walking units walk on along their paths and sends rests back to be
//! smoothed. Claims, class grids, the classes' registry, the queue, region maps and
//! cached trees are rebuilt from the loaded units and maps; frame statistics and checksums are
//! runtime only.

use bevy::ecs::entity::{EntityHashMap, EntityMapper, MapEntities};
use bevy::ecs::lifecycle::HookContext;
use bevy::ecs::world::DeferredWorld;
use bevy::prelude::*;

use super::movement::state::PathProgress;
use super::queue::path_queue::PathQueue;
use crate::plugin::agent::NavAgent;
use crate::plugin::classes::{HeldKeys, NavClasses, PlayerId, UnitClass, class_key};
use crate::plugin::outcomes::NavPath;
use crate::plugin::request::{PathOrigin, PathRequest, PathStatus, PendingRequests, Ticket};
use crate::plugin::settings::TilepathSettings;

/// A request the plugin owed a unit an outcome for when the game was saved.
#[derive(Clone, Debug, PartialEq, Reflect)]
pub struct SavedRequest {
    /// What it asked.
    pub request: PathRequest,
    /// Who made it.
    pub origin: PathOrigin,
    /// It was removed or replaced before the save and its
    /// [`Cancelled`](crate::OutcomeKind::Cancelled) outcome was still to go out.
    pub cancelled: bool,
}

impl SavedRequest {
    fn of(ticket: &Ticket, cancelled: bool) -> Self {
        SavedRequest {
            request: ticket.request.clone(),
            origin: ticket.origin,
            cancelled,
        }
    }
}

impl MapEntities for SavedRequest {
    fn map_entities<E: EntityMapper>(&mut self, mapper: &mut E) {
        self.request.map_entities(mapper);
    }
}

/// What the plugin holds of a unit outside the unit's own components, written onto it by
/// [`save_with`] for the length of a save. Loading it queues the requests owed again at once
/// (the unit's [`PathRequest`], loaded beside it, queues nothing); the plugin's first frame
/// after loading carries the unit on along its path and removes it.
#[derive(Component, Clone, Debug, Default, PartialEq, Reflect)]
#[component(on_insert = on_saved_insert)]
#[reflect(Component, Default)]
pub struct SavedNav {
    /// The requests owed an outcome, oldest first.
    #[entities]
    pub owed: Vec<SavedRequest>,
    /// The unit's [`PathStatus`] (loading a [`PathRequest`] marks it queued meanwhile).
    pub status: PathStatus,
    /// Where the raw rest of its path begins, if part of it was still to smooth: the path's
    /// cell and waypoint indices, and the body radius it is smoothed for.
    pub rest: Option<(usize, usize, f32)>,
    /// The plugin's next ticket and frame count at the save: tickets stay unique and increasing,
    /// and frames go on counting, in the loaded game.
    pub clock: (u64, u64),
    /// Whether the unit had a [`PathRequest`] at the save.
    pub had_request: bool,
    /// Written by [`save_with`] in the running game: nothing to take back.
    #[reflect(ignore)]
    saving: bool,
    /// Loaded before the unit's [`PathRequest`]: that one, when the loader inserts it, is
    /// not a new request.
    #[reflect(ignore)]
    awaiting_request: bool,
}

/// A loaded [`SavedNav`]: the requests owed are queued again (and the one the loader's
/// [`PathRequest`] queued, if it came first, is dropped: it was answered before the save, or
/// is among those owed).
fn on_saved_insert(mut world: DeferredWorld, ctx: HookContext) {
    let entity = ctx.entity;
    let Some(saved) = world.get::<SavedNav>(entity).cloned() else {
        return;
    };
    if saved.saving {
        return;
    }
    let has_request = world.get::<PathRequest>(entity).is_some();
    let Some(mut book) = world.get_resource_mut::<PendingRequests>() else {
        return;
    };
    book.resume_clock(saved.clock);
    if has_request {
        book.forget(entity);
    }
    let mut queued = false;
    for owed in saved.owed {
        if owed.cancelled {
            book.restore_cancelled(entity, owed.request, owed.origin);
        } else {
            book.submit(entity, owed.request, owed.origin);
            queued = true;
        }
    }
    if saved.had_request
        && !has_request
        && let Some(mut nav) = world.get_mut::<SavedNav>(entity)
    {
        nav.awaiting_request = true;
    }
    if let Some(mut status) = world.get_mut::<PathStatus>(entity) {
        *status = if queued {
            PathStatus::Queued
        } else {
            saved.status
        };
    }
}

/// Whether the [`PathRequest`] just inserted on `entity` is a loaded game's, of a unit whose
/// [`SavedNav`] came first (it queues nothing: see [`on_saved_insert`]).
pub(crate) fn loaded_request(world: &mut DeferredWorld, entity: Entity) -> bool {
    match world.get_mut::<SavedNav>(entity) {
        Some(mut saved) if saved.awaiting_request => {
            saved.awaiting_request = false;
            true
        }
        _ => false,
    }
}

/// Saves a game: runs `save` (which builds the saved game from the world, e.g. a Bevy
/// `DynamicWorld`) with a [`SavedNav`] on every unit that has a [`PathStatus`], and removes them
/// again. Save between frames (not from inside the plugin's systems). Load the saved game as
/// usual, into a world with the plugins: every unit carries on (see the [module](self)).
/// Outcomes delivered
/// before the save are in the units' saved [`PathStatus`] and [`NavPath`]; their
/// [`PathOutcome`](crate::PathOutcome) messages are not saved, so read them in a system after
/// [`TilepathSystems::Receive`](crate::TilepathSystems::Receive) (in the same frame), not in
/// the frame after, where a save in between would leave them behind.
///
/// ```
/// # #[cfg(feature = "serialize")] {
/// use bevy::prelude::*;
/// use bevy::world_serialization::DynamicWorldBuilder;
/// use bevy_tilepath::prelude::*;
///
/// // The units and maps (the plugin's components) and the settings, as RON.
/// fn save(world: &mut World) -> String {
///     bevy_tilepath::save_with(world, |world| {
///         let registry = world.resource::<AppTypeRegistry>().clone();
///         let registry = registry.read();
///         let mut units =
///             world.query_filtered::<Entity, Or<(With<NavAgent>, With<PathStatus>, With<NavMap>)>>();
///         DynamicWorldBuilder::from_world(world, &registry)
///             .extract_entities(units.iter(world))
///             .allow_resource::<TilepathSettings>()
///             .extract_resources()
///             .build()
///             .serialize(&registry)
///             .expect("registered types")
///     })
/// }
/// # }
/// ```
pub fn save_with<R>(world: &mut World, save: impl FnOnce(&mut World) -> R) -> R {
    let mut units =
        world.query_filtered::<(Entity, &PathStatus, Has<PathRequest>), Without<SavedNav>>();
    let saved: Vec<(Entity, SavedNav)> = {
        let book = world.get_resource::<PendingRequests>();
        let queue = world.get_resource::<PathQueue>();
        let clock = book.map_or((1, 0), PendingRequests::clock);
        // Each unit's owed requests, oldest first: outcomes ready to go out, then cancelled
        // and pending requests.
        let mut owed: EntityHashMap<Vec<SavedRequest>> = EntityHashMap::default();
        let ready = queue.into_iter().flat_map(PathQueue::owed_ready);
        for (entity, ticket, cancelled) in
            ready.chain(book.into_iter().flat_map(PendingRequests::owed))
        {
            owed.entry(entity)
                .or_default()
                .push(SavedRequest::of(ticket, cancelled));
        }
        let rests: EntityHashMap<_> = queue.into_iter().flat_map(PathQueue::rests).collect();
        units
            .iter(world)
            .map(|(entity, status, had_request)| {
                let saved = SavedNav {
                    owed: owed.remove(&entity).unwrap_or_default(),
                    status: *status,
                    rest: rests.get(&entity).copied(),
                    clock,
                    had_request,
                    saving: true,
                    awaiting_request: false,
                };
                (entity, saved)
            })
            .collect()
    };
    for (entity, nav) in &saved {
        world.entity_mut(*entity).insert(nav.clone());
    }
    let out = save(world);
    for (entity, _) in saved {
        if let Ok(mut e) = world.get_entity_mut(entity) {
            e.remove::<SavedNav>();
        }
    }
    out
}

/// What [`restore_saved`] reads of a loaded unit.
type Loaded = (
    Entity,
    &'static SavedNav,
    Option<&'static mut NavPath>,
    Option<&'static mut PathProgress>,
    Option<&'static UnitClass>,
    Option<&'static NavAgent>,
    Option<&'static PlayerId>,
    Option<&'static HeldKeys>,
);

/// Carries loaded units on (see the [module](self)): first in the plugin's frame.
pub(crate) fn restore_saved(
    mut units: Query<Loaded>,
    book: Res<PendingRequests>,
    mut queue: ResMut<PathQueue>,
    mut registry: ResMut<NavClasses>,
    settings: Res<TilepathSettings>,
    mut commands: Commands,
) {
    if units.is_empty() {
        return;
    }
    let mut loaded: Vec<_> = units.iter_mut().collect();
    // Stable order: the loaded entities' ids, as the game spawned them.
    loaded.sort_unstable_by_key(|u| u.0);
    for (entity, saved, mut path, progress, class, agent, player, keys) in loaded {
        if let Some(path) = &mut path {
            // Class ids are handed out as classes appear: the loaded game's may differ.
            let parts = (class, agent, player, keys);
            path.class = registry.intern(class_key(parts, settings.fog.enabled));
        }
        if let Some(mut progress) = progress {
            progress.restore(path.as_ref().map(|p| (p.map, p.ticket)));
        }
        if let (Some(path), Some(rest)) = (&path, saved.rest) {
            queue.restore_rest(entity, path, rest, book.frame);
        }
        commands.entity(entity).remove::<SavedNav>();
    }
}
