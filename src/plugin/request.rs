//! A unit's request and its lifecycle: [`PathRequest`] (inserted by the game), the requests the
//! plugin makes itself ([`PathOrigin`]), tickets, and [`PendingRequests`], which holds every
//! request that has no outcome yet.

use bevy::ecs::entity::{EntityHashMap, EntityMapper, MapEntities};
use bevy::ecs::system::Command;
use bevy::prelude::*;

use crate::core::{Cell, GoalPolicy, PathError};

/// Where a unit wants to go.
#[derive(Clone, Debug, PartialEq, Reflect)]
pub enum PathGoal {
    /// A world position (the cell containing it).
    World(Vec2),
    /// A cell of the map.
    Cell(Cell),
    /// The cheapest to reach of several cells (Dijkstra; Lester's nearest resource).
    NearestOf(Vec<Cell>),
    /// One unit's place in a group order: go to `slot`, sharing one search to `target` with
    /// every request to the same target; the unit plans on its own only the last tiles, from
    /// where its shared path comes within `slot`'s distance of `target` (plus two tiles).
    /// [`group_order`](crate::group_order) hands out slots around a point.
    Slot {
        /// The unit's own cell near the target.
        slot: Cell,
        /// The group's target, where the shared search starts from.
        target: Cell,
    },
    /// Follow a unit (any entity with a `Transform`) and stop within `range` tiles of it
    /// (centre to centre): the path goes to the cell the target stands on when the request is
    /// searched; while the target moves the plugin searches again whenever the path no longer
    /// ends near it, stops the follower once it is in range and sets off again once the target
    /// is out of it (see [`Pursuit`](crate::Pursuit)). Followers of one target searched together
    /// share one search. The order lasts until it is replaced or removed, or its target is
    /// despawned ([`PathFailure::TargetGone`]).
    Entity {
        /// The unit to follow.
        target: Entity,
        /// How close (tiles, centre to centre) is close enough; a range shorter than the
        /// bodies allow stops the follower as close as it can get.
        range: f32,
    },
}

impl MapEntities for PathGoal {
    fn map_entities<E: EntityMapper>(&mut self, mapper: &mut E) {
        if let PathGoal::Entity { target, .. } = self {
            *target = mapper.get_mapped(*target);
        }
    }
}

/// Ask for a path: insert this on a unit (an entity with a `Transform`). Inserting a new one
/// replaces the old request (which ends as cancelled); removing it cancels; despawning the unit
/// drops its search without a trace. Every request ends in exactly one
/// [`PathOutcome`](crate::PathOutcome).
///
/// The component stays the game's: searches the plugin starts by itself (after grid edits, for
/// units in the way) never overwrite it; they are requests of their own with a
/// [`PathOrigin`] other than [`PathOrigin::User`], and their outcomes say so.
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[component(map_entities)]
#[require(PathStatus, Transform)]
#[reflect(Component)]
pub struct PathRequest {
    /// The goal.
    pub goal: PathGoal,
    /// What to do if the goal is blocked or unreachable.
    pub policy: GoalPolicy,
    /// Higher goes first; waiting requests age upward so nothing starves.
    pub priority: i32,
    /// The map to search (`None`: the only [`NavMap`](crate::NavMap) there is).
    pub map: Option<Entity>,
    /// Ask for a shortest path: never served by the hierarchical search of long requests
    /// ([`TilepathSettings::hierarchical_beyond`](crate::TilepathSettings::hierarchical_beyond)),
    /// whose paths may be a few percent longer.
    pub optimal: bool,
    /// The way a unit with a [`Mover`](crate::Mover) turns to face once it has arrived (a world
    /// direction; `None`: the way it was walking). A formation's facing
    /// ([`GroupOrder`](crate::GroupOrder)).
    pub facing: Option<Vec2>,
    /// The fastest a unit with a [`Mover`](crate::Mover) walks this order, in tiles a second
    /// (`None`: its own speed): a group's pace ([`GroupOrder::at_pace`](crate::GroupOrder::at_pace)),
    /// the speed of its slowest member, so tanks and infantry ordered together keep together.
    pub pace: Option<f32>,
}

impl PathRequest {
    /// A request to a world position.
    pub fn to_world(goal: Vec2) -> Self {
        Self::new(PathGoal::World(goal))
    }

    /// A request to a cell.
    pub fn to_cell(goal: Cell) -> Self {
        Self::new(PathGoal::Cell(goal))
    }

    /// A request to the nearest of several cells.
    pub fn to_nearest(goals: Vec<Cell>) -> Self {
        Self::new(PathGoal::NearestOf(goals))
    }

    /// A request to follow `target` and stop within `range` tiles of it ([`PathGoal::Entity`]).
    pub fn follow(target: Entity, range: f32) -> Self {
        Self::new(PathGoal::Entity { target, range })
    }

    /// A request to any goal.
    pub fn new(goal: PathGoal) -> Self {
        PathRequest {
            goal,
            policy: GoalPolicy::Fail,
            priority: 0,
            map: None,
            optimal: false,
            facing: None,
            pace: None,
        }
    }

    /// With a goal policy.
    pub fn with_policy(mut self, policy: GoalPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// With a priority.
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// On a given map.
    pub fn on_map(mut self, map: Entity) -> Self {
        self.map = Some(map);
        self
    }

    /// Facing `direction` (a world direction) once arrived (see [`PathRequest::facing`]; a zero
    /// or not finite direction: none).
    pub fn facing(mut self, direction: Vec2) -> Self {
        self.facing = (direction.is_finite() && direction != Vec2::ZERO).then_some(direction);
        self
    }

    /// Walked at most `speed` tiles a second (see [`PathRequest::pace`]; a speed that is not a
    /// positive finite number: the unit's own).
    pub fn at_pace(mut self, speed: f32) -> Self {
        self.pace = (speed.is_finite() && speed > 0.0).then_some(speed);
        self
    }

    /// Asking for a shortest path (see [`PathRequest::optimal`]).
    pub fn shortest(mut self) -> Self {
        self.optimal = true;
        self
    }
}

impl MapEntities for PathRequest {
    fn map_entities<E: EntityMapper>(&mut self, mapper: &mut E) {
        self.map.map_entities(mapper);
        self.goal.map_entities(mapper);
    }
}

/// Who asked for a search: the game, through its [`PathRequest`], or the plugin itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
pub enum PathOrigin {
    /// The game's own [`PathRequest`].
    #[default]
    User,
    /// A grid edit crossed the unit's remaining path: the same goal, searched again.
    GridEdit,
    /// The unit was kept in place by other units: the same goal, searched again around them.
    Stuck,
    /// The unit's goal cell was taken by a stopped unit: the nearest free cell instead.
    GoalTaken,
    /// The line to the next waypoint became blocked: the same goal, searched again.
    Blocked,
    /// An idle unit asked to make way steps to a free cell nearby.
    MakeWay,
    /// A unit meeting another head-on steps aside to a free cell.
    StepAside,
    /// After stepping aside, the unit resumes its order.
    Resume,
    /// Fog of war: the unit's player saw a cell ahead on its path other than it had assumed
    /// (a wall where it planned open ground): the same goal, searched again with what is known
    /// now.
    Revealed,
    /// A follower's target ([`PathGoal::Entity`]) moved away from where the follower's path
    /// ends, or out of its range while it stood: the same order, searched again toward where
    /// the target is now (or failing with [`PathFailure::TargetGone`] once it is despawned).
    Pursuit,
    /// A follower came within range of its target on the way: it stops where it stands.
    InRange,
}

impl PathOrigin {
    /// Whether the game asked for this search (`false`: the plugin did).
    pub fn is_user(self) -> bool {
        self == PathOrigin::User
    }
}

/// Why a request failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
pub enum PathFailure {
    /// There is no [`NavMap`](crate::NavMap), or several and the request named none.
    NoMap,
    /// The goal is not a finite number.
    GoalNotFinite,
    /// The goal lies outside the map.
    GoalOutOfBounds,
    /// The unit stands outside the map.
    StartOutOfBounds,
    /// The unit stands on a blocked cell.
    StartBlocked,
    /// The goal cell is blocked.
    GoalBlocked,
    /// The goal is on another island (answered without searching).
    Unreachable,
    /// Every reachable cell was searched without reaching the goal (cells occupied by other
    /// units can cause this).
    NoPath,
    /// The search hit its expansion limit.
    SearchLimitExceeded,
    /// A nearest-of request had no goals.
    NoGoals,
    /// The unit's class cannot plan on this map: its body needs a footprint wider than the
    /// map supports ([`ClassError`](crate::core::ClassError): at most `MAX_CLEARANCE - 1`
    /// rings, and on hexagons none); or its path leads where its body cannot go (a gap
    /// between hexagons narrower than it): its way found blocked by a wall, it planned the same
    /// path again a few times without getting closer, and stopped.
    UnitTooWide,
    /// The unit to follow ([`PathGoal::Entity`]) is despawned or has no `Transform`.
    TargetGone,
    /// A follow range ([`PathGoal::Entity`]) that is negative or not a finite number.
    BadRange,
    /// The unit is a [`Vehicle`](crate::Vehicle) and no plan of legal turns it can drive
    /// reaches its path's goal (too tight to turn, even reversing): a path was found, but not
    /// one it can drive. Its path is removed, as a failed search's.
    NoDrivableWay,
}

impl From<PathError> for PathFailure {
    fn from(e: PathError) -> Self {
        match e {
            PathError::StartOutOfBounds(_) => PathFailure::StartOutOfBounds,
            PathError::GoalOutOfBounds(_) => PathFailure::GoalOutOfBounds,
            PathError::StartBlocked(_) => PathFailure::StartBlocked,
            PathError::GoalBlocked(_) => PathFailure::GoalBlocked,
            PathError::Unreachable => PathFailure::Unreachable,
            PathError::NoPath | PathError::NotStarted | PathError::Unsupported(_) => {
                PathFailure::NoPath
            }
            PathError::LimitExceeded { .. } => PathFailure::SearchLimitExceeded,
            PathError::NoGoals => PathFailure::NoGoals,
        }
    }
}

/// Where a unit's latest request (the game's or the plugin's) stands.
///
/// Despawning a unit ends every request it has without an outcome: the one pending, those
/// cancelled whose [`Cancelled`](crate::OutcomeKind::Cancelled) outcome was still to go out,
/// and those whose outcome waited for delivery. The plugin owes a unit that is gone nothing, so
/// a game saved right after a despawn owes nothing it cannot save.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Component)]
pub enum PathStatus {
    /// No request yet.
    #[default]
    Idle,
    /// Waiting in the queue.
    Queued,
    /// Being searched.
    Searching,
    /// A [`NavPath`](crate::NavPath) was found.
    Found,
    /// The request failed.
    Failed(PathFailure),
    /// The request was removed or replaced before it finished.
    Cancelled,
}

/// A request that has no outcome yet: its ticket, the frame it was made, who made it, and what
/// it asks.
#[derive(Clone, Debug)]
pub(crate) struct Ticket {
    pub(crate) id: u64,
    pub(crate) frame: u64,
    pub(crate) origin: PathOrigin,
    pub(crate) request: PathRequest,
}

/// A request made this frame, waiting to be validated.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Submitted {
    pub(crate) entity: Entity,
    pub(crate) ticket: u64,
}

/// A request that ended before it was searched: removed or replaced (cancelled).
#[derive(Clone, Debug)]
pub(crate) struct Ended {
    pub(crate) entity: Entity,
    pub(crate) ticket: Ticket,
}

/// Every request without an outcome, one per unit at most (a newer one cancels the older).
/// Read it to know whether the plugin still owes a unit an outcome.
#[derive(Resource, Debug)]
pub struct PendingRequests {
    next_ticket: u64,
    pending: EntityHashMap<Ticket>,
    /// Requests made since validation last ran, in order.
    pub(crate) submitted: Vec<Submitted>,
    /// Requests cancelled (removed or replaced), their outcomes not yet delivered.
    pub(crate) cancelled: Vec<Ended>,
    /// Set when a request left without its queued job (cancel, replace, despawn).
    pub(crate) stale: bool,
    /// Requests taken for their outcome whose outcome is not delivered yet (delivery has a
    /// budget: the rest go out next frame).
    pub(crate) in_delivery: usize,
    /// Frames counted by the plugin (advanced at the end of each of its frames).
    pub(crate) frame: u64,
}

impl Default for PendingRequests {
    fn default() -> Self {
        PendingRequests {
            next_ticket: 1,
            pending: EntityHashMap::default(),
            submitted: Vec::new(),
            cancelled: Vec::new(),
            stale: false,
            in_delivery: 0,
            frame: 0,
        }
    }
}

impl PendingRequests {
    /// Requests without an outcome delivered yet (cancelled ones whose outcome is still to go
    /// out included).
    pub fn len(&self) -> usize {
        self.pending.len() + self.cancelled.len() + self.in_delivery
    }

    /// Whether every request has its outcome.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `entity` has a request without an outcome.
    pub fn contains(&self, entity: Entity) -> bool {
        self.pending.contains_key(&entity)
    }

    /// Who made `entity`'s pending request, if it has one.
    pub fn origin(&self, entity: Entity) -> Option<PathOrigin> {
        self.pending.get(&entity).map(|t| t.origin)
    }

    /// `entity`'s pending request (the game's or one the plugin made), if it has one.
    pub fn request(&self, entity: Entity) -> Option<&PathRequest> {
        self.pending.get(&entity).map(|t| &t.request)
    }

    /// Frames the oldest request without an outcome has waited at plugin frame `frame` (0 if
    /// none waits).
    pub(crate) fn oldest_wait(&self, frame: u64) -> u32 {
        let oldest = self
            .pending
            .values()
            .chain(self.cancelled.iter().map(|c| &c.ticket))
            .map(|t| t.frame)
            .min();
        oldest.map_or(0, |f| frame.saturating_sub(f) as u32)
    }

    /// Whether `ticket` is `entity`'s pending request.
    pub(crate) fn is_current(&self, entity: Entity, ticket: u64) -> bool {
        self.pending.get(&entity).is_some_and(|t| t.id == ticket)
    }

    /// Takes `entity`'s pending request if `ticket` is it: it is about to get its outcome
    /// (counted in [`PendingRequests::len`] until it is delivered).
    pub(crate) fn take(&mut self, entity: Entity, ticket: u64) -> Option<Ticket> {
        if self.is_current(entity, ticket) {
            self.in_delivery += 1;
            self.pending.remove(&entity)
        } else {
            None
        }
    }

    /// A new request for `entity` (the older one, if any, ends as cancelled).
    pub(crate) fn submit(&mut self, entity: Entity, request: PathRequest, origin: PathOrigin) {
        self.cancel(entity);
        let ticket = self.ticket(request, origin);
        self.submitted.push(Submitted {
            entity,
            ticket: ticket.id,
        });
        self.pending.insert(entity, ticket);
    }

    /// The next ticket, for `request` made by `origin` this frame.
    fn ticket(&mut self, request: PathRequest, origin: PathOrigin) -> Ticket {
        let id = self.next_ticket;
        self.next_ticket += 1;
        Ticket {
            id,
            frame: self.frame,
            origin,
            request,
        }
    }

    /// Ends `entity`'s pending request, if any, as cancelled.
    pub(crate) fn cancel(&mut self, entity: Entity) {
        if let Some(ticket) = self.pending.remove(&entity) {
            self.stale = true;
            self.cancelled.push(Ended { entity, ticket });
        }
    }

    /// The requests owed an outcome, each unit's oldest first, with whether they were
    /// cancelled (a saved game keeps them, see [`crate::save_with`]).
    pub(crate) fn owed(&self) -> impl Iterator<Item = (Entity, &Ticket, bool)> {
        let cancelled = self.cancelled.iter().map(|c| (c.entity, &c.ticket, true));
        cancelled.chain(self.pending.iter().map(|(&e, t)| (e, t, false)))
    }

    /// A request cancelled before a game was saved, its outcome owed still: it goes out as
    /// cancelled.
    pub(crate) fn restore_cancelled(
        &mut self,
        entity: Entity,
        request: PathRequest,
        origin: PathOrigin,
    ) {
        let ticket = self.ticket(request, origin);
        self.cancelled.push(Ended { entity, ticket });
    }

    /// The next ticket to hand out, and the frame count (a saved game keeps both).
    pub(crate) fn clock(&self) -> (u64, u64) {
        (self.next_ticket, self.frame)
    }

    /// Goes on from a saved game's [`PendingRequests::clock`]: tickets stay unique and
    /// increasing, and frames go on counting, across the save.
    pub(crate) fn resume_clock(&mut self, (next_ticket, frame): (u64, u64)) {
        self.next_ticket = self.next_ticket.max(next_ticket);
        self.frame = self.frame.max(frame);
    }

    /// Forgets `entity`'s pending request without an outcome (the unit is gone).
    pub(crate) fn forget(&mut self, entity: Entity) {
        if self.pending.remove(&entity).is_some() {
            self.stale = true;
        }
    }
}

/// A search the plugin makes for a unit by itself, leaving the unit's [`PathRequest`] alone (a
/// [`Command`]: queue it from systems that run before the next validation).
pub(crate) struct SubmitInternal {
    pub(crate) entity: Entity,
    pub(crate) request: PathRequest,
    pub(crate) origin: PathOrigin,
}

impl Command for SubmitInternal {
    type Out = ();

    fn apply(self, world: &mut World) {
        if world.get_entity(self.entity).is_err() {
            return;
        }
        if let Some(mut book) = world.get_resource_mut::<PendingRequests>() {
            book.submit(self.entity, self.request, self.origin);
        }
        world.entity_mut(self.entity).insert(PathStatus::Queued);
    }
}

/// End of the plugin's frame: advance the frame counter (latency and ageing count in it).
pub(crate) fn next_frame(mut book: ResMut<PendingRequests>) {
    book.frame += 1;
}
