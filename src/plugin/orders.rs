//! RTS orders beyond "go there": waypoints queued after a unit's current order (shift-click),
//! patrols that loop through them, stopping where the unit stands, and holding position.

use std::collections::VecDeque;

use bevy::ecs::entity::{EntityMapper, MapEntities};
use bevy::prelude::*;

use crate::plugin::map::NavMap;
use crate::plugin::outcomes::NavPath;
use crate::plugin::request::{PathGoal, PathOrigin, PathRequest, PathStatus};

/// How close (tiles) a unit comes to the end of its path before its next queued order starts:
/// it walks on into the next leg instead of stopping at the waypoint.
pub const NEXT_ORDER_WITHIN: f32 = 1.5;

/// The orders a unit carries out after its current [`PathRequest`], one after another: when
/// the unit comes within [`NEXT_ORDER_WITHIN`] tiles of its path's end, or its order fails,
/// the plugin gives it a request to the next goal (with the current request's policy,
/// priority, map and optimality), so it walks on without stopping. A follow order
/// ([`PathGoal::Entity`]) has no end: the next order starts once it fails (its target
/// despawned or out of reach). Each queued order ends in
/// its own [`PathOutcome`](crate::PathOutcome), as a request of the game's.
///
/// A patrol loops: each goal the unit leaves for the next goes to the back of the queue, unless
/// its order failed (the point is walled off, say: it drops out of the patrol).
///
/// ```
/// use bevy::prelude::*;
/// use bevy_tilepath::prelude::*;
/// use bevy_tilepath::OrderQueue;
///
/// // Patrol between (4, 4) and (20, 4): go to (20, 4), then back, and again.
/// fn patrol(mut commands: Commands, unit: Entity) {
///     commands.entity(unit).insert((
///         PathRequest::to_cell(Cell::new(20, 4)),
///         OrderQueue::patrol([PathGoal::Cell(Cell::new(4, 4))]),
///     ));
/// }
/// ```
#[derive(Component, Clone, Debug, Default, PartialEq, Reflect)]
#[component(map_entities)]
#[reflect(Component, Default)]
pub struct OrderQueue {
    /// Goals still to go to, in order.
    pub goals: VecDeque<PathGoal>,
    /// Loop: the goal of each order the unit leaves goes to the back of the queue.
    pub patrol: bool,
}

impl OrderQueue {
    /// Goals to visit one after another.
    pub fn new(goals: impl IntoIterator<Item = PathGoal>) -> Self {
        OrderQueue {
            goals: goals.into_iter().collect(),
            patrol: false,
        }
    }

    /// Goals to loop through after the current order's.
    pub fn patrol(goals: impl IntoIterator<Item = PathGoal>) -> Self {
        OrderQueue {
            patrol: true,
            ..Self::new(goals)
        }
    }

    /// Queues `goal` after the others (a shift-click).
    pub fn push(&mut self, goal: PathGoal) {
        self.goals.push_back(goal);
    }
}

impl MapEntities for OrderQueue {
    fn map_entities<E: EntityMapper>(&mut self, mapper: &mut E) {
        for goal in &mut self.goals {
            goal.map_entities(mapper);
        }
    }
}

/// Marks a unit that holds its position: it is never pushed aside, never makes way or steps
/// aside for others, and others plan round it as round any unit standing still. Give it with
/// [`hold_position`] (which also stops the unit); remove it to let the unit give way again.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Component, Default)]
pub struct HoldPosition;

/// Stops a unit where it stands (an entity command:
/// `commands.entity(unit).queue(stop)`): its queued orders are dropped and it is given a
/// request to the cell it stands on (its current request, if still pending, ends as
/// cancelled), so it stands there as an arrived unit does, occupying its cell.
pub fn stop(mut unit: EntityWorldMut) {
    let Some(at) = unit.get::<Transform>().map(|t| t.translation.truncate()) else {
        return;
    };
    let map = unit.get::<PathRequest>().and_then(|r| r.map);
    unit.remove::<OrderQueue>();
    let mut request = PathRequest::to_world(at);
    request.map = map;
    unit.insert(request);
}

/// Stops a unit and has it hold its position ([`HoldPosition`]).
pub fn hold_position(mut unit: EntityWorldMut) {
    unit.insert(HoldPosition);
    stop(unit);
}

/// What [`advance_orders`] reads of a unit.
type Ordered = (
    Entity,
    &'static mut OrderQueue,
    &'static PathRequest,
    &'static PathStatus,
    Option<&'static NavPath>,
    &'static Transform,
);

/// Starts each unit's next queued order once it nears the end of its path (or its order
/// failed).
pub(crate) fn advance_orders(
    mut units: Query<Ordered>,
    maps: Query<&NavMap>,
    mut commands: Commands,
) {
    for (entity, mut queue, request, status, path, transform) in &mut units {
        if queue.goals.is_empty() {
            continue;
        }
        let next_now = match status {
            PathStatus::Failed(_) => true,
            // Not the end of a trip made for others (its order resumes after it), nor a
            // follower's (it follows until its target is gone).
            PathStatus::Found if matches!(request.goal, PathGoal::Entity { .. }) => false,
            PathStatus::Found => path.is_some_and(|p| {
                !matches!(p.origin, PathOrigin::MakeWay | PathOrigin::StepAside)
                    && near_end(p, &maps, transform)
            }),
            _ => false,
        };
        if !next_now {
            continue;
        }
        let goal = queue.goals.pop_front().expect("not empty");
        // A patrol point the unit could not reach (walled off, say) drops out of the loop:
        // kept, a patrol that can reach one point or none would ask again every frame.
        if queue.patrol && *status == PathStatus::Found {
            queue.goals.push_back(request.goal.clone());
        }
        // The order's policy, priority and map; its facing was for its own goal (a formation's).
        let next = PathRequest {
            goal,
            facing: None,
            ..request.clone()
        };
        commands.entity(entity).insert(next);
    }
}

/// Whether the unit at `transform` is within [`NEXT_ORDER_WITHIN`] tiles of `path`'s end.
fn near_end(path: &NavPath, maps: &Query<&NavMap>, transform: &Transform) -> bool {
    let (Ok(map), Some(&end)) = (maps.get(path.map), path.waypoints.last()) else {
        return true;
    };
    let here = map.world_to_grid(transform.translation.truncate());
    here.distance(map.world_to_grid(end)) <= NEXT_ORDER_WITHIN
}
