//! What movement's phases share: the frame's context ([`Ctx`]) and one unit's view of the frame
//! ([`Unit`]).

use bevy::prelude::*;

use crate::core::{Body, Cell, NavGrid};

use super::super::claims::Claims;
use super::super::map::NavMap;
use super::super::outcomes::NavPath;
use super::super::pursuit::Anchors;
use super::super::request::{PathOrigin, PathRequest, PathStatus, PendingRequests, SubmitInternal};
use super::super::settings::CrowdSettings;
use super::super::traffic::PassageTraffic;
use super::mover::{Arrived, Mover};
use super::neighbours::Neighbours;

/// What the movement system shares between units in one frame.
pub(super) struct Ctx<'a, 'w, 's> {
    pub(super) claims: &'a mut Claims,
    pub(super) book: &'a PendingRequests,
    pub(super) crowd: &'a CrowdSettings,
    pub(super) commands: Commands<'w, 's>,
    pub(super) arrived: MessageWriter<'w, Arrived>,
    pub(super) dt: f32,
    /// Seconds since the app started (one-way passages take turns by it).
    pub(super) clock: f32,
    /// The units by cell as they stood at the frame's start, with local avoidance on.
    pub(super) neighbours: Option<&'a Neighbours>,
    /// Neighbours' bodies, reused from unit to unit.
    pub(super) scratch: Vec<Body>,
    /// A unit's path's corridor (read when a unit steps aside for another).
    pub(super) corridor_of: &'a dyn Fn(Entity) -> Vec<Cell>,
    /// The passages wide units' paths still cross.
    pub(super) traffic: &'a mut PassageTraffic,
    /// Whether a unit gives way to another where one of two must (meeting head-on): the later
    /// in lockstep order in lockstep mode (the same on every client, whatever their entities),
    /// else the later entity.
    pub(super) gives_way: &'a dyn Fn(Entity, Entity) -> bool,
    /// Followed targets, where they stand.
    pub(super) anchors: &'a Anchors,
}

impl Ctx<'_, '_, '_> {
    /// Asks for a search of the plugin's own for `entity` (its [`PathRequest`] stays as it is).
    pub(super) fn submit(&mut self, entity: Entity, request: PathRequest, origin: PathOrigin) {
        self.commands.queue(SubmitInternal {
            entity,
            request,
            origin,
        });
    }
}

/// One unit's view of this frame.
pub(super) struct Unit<'a> {
    pub(super) entity: Entity,
    pub(super) mover: &'a Mover,
    /// The body's radius (against other units).
    pub(super) radius: f32,
    /// The body's radius against the walls of `grid` (grown by the class's footprint, so
    /// smaller; see [`MoveClass::wall_radius`](crate::core::MoveClass::wall_radius)).
    pub(super) wall_radius: f32,
    pub(super) map_entity: Entity,
    pub(super) map: &'a NavMap,
    /// The grid of the unit's class on `map` (the one its path was planned on).
    pub(super) grid: &'a NavGrid,
    /// Its class's footprint: rings of cells its body covers around its own.
    pub(super) footprint: u8,
    /// A version that changes with every edit of `grid` (the shared grid's under fog of war:
    /// what the unit's player sees changes its grid every frame, and a wall seen across its
    /// way repaths it).
    pub(super) edits_version: u64,
    pub(super) path: &'a NavPath,
    pub(super) status: PathStatus,
    /// The game's controller moves it (it has a [`DesiredVelocity`]): its body may lag behind
    /// the walk, and it arrives only once the body is close to the end.
    pub(super) controlled: bool,
    /// Loaded from a saved game with its path this frame: it walks on along it, and claims its
    /// cells anew.
    pub(super) resumed: bool,
    /// It holds its position ([`HoldPosition`]): it never makes way for others.
    pub(super) holds: bool,
    /// The unit it follows, on a follow order.
    pub(super) follows: Option<Entity>,
}
