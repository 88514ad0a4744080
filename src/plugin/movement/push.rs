//! Pushing: after the frame's moves, bodies that overlap are pushed apart (StarCraft-style
//! shoving). A unit on its way pushes a standing (idle or arrived) unit aside instead of asking
//! it to repath; units of the same kind share the push. A push never moves a body onto a blocked
//! cell (it slides along the wall, or stays), and units walking through others (the crowd's last
//! resort) neither push nor are pushed. Pushed units settle where they are pushed; a unit on its
//! way walks on along its curve with the push as an offset that fades, so it drifts back onto its
//! smoothed path without planning it again.

use bevy::ecs::entity::EntityHashSet;
use bevy::prelude::*;

use crate::core::{Body, NavGrid, overlaps_blocked, wall_radius};

use super::Mover;
use super::neighbours::{Member, Neighbours};
use super::state::{MoveState, PathProgress};
use crate::plugin::agent::NavAgent;
use crate::plugin::classes::ClassId;
use crate::plugin::map::NavMap;
use crate::plugin::settings::{CrowdSettings, TilepathSettings};

/// Passes over the overlapping pairs per frame (each resolves what the one before left, as
/// pushes chain through a crowd): the first [`FULL_PASSES`] part every overlap, the rest only
/// overlaps deeper than [`DEEP`] of the sum of the two radii (the few that the crowd presses
/// together), so they cost little.
const PASSES: usize = 32;
const FULL_PASSES: usize = 8;
const DEEP: f32 = 0.1;

/// How a unit takes part in pushing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Role {
    /// On its way (moving or waiting).
    Underway,
    /// Idle or arrived.
    Standing,
    /// Walking through others: left alone.
    Exempt,
}

impl Role {
    fn of(state: MoveState) -> Role {
        match state {
            MoveState::Moving | MoveState::Waiting { .. } => Role::Underway,
            MoveState::Idle | MoveState::Arrived => Role::Standing,
            MoveState::WalkingThrough { .. } => Role::Exempt,
        }
    }
}

/// The share of a push that `me` takes against `other`.
fn share(me: Role, other: Role, crowd: &CrowdSettings) -> f32 {
    match (me, other) {
        (Role::Standing, Role::Underway) => crowd.push_strength,
        (Role::Underway, Role::Standing) => 1.0 - crowd.push_strength,
        _ => 0.5,
    }
}

/// Pushes overlapping units apart (see the module docs); off with
/// [`CrowdSettings::pushing`].
pub(super) fn push_apart(
    time: Res<Time>,
    settings: Res<TilepathSettings>,
    maps: Query<(Entity, &NavMap)>,
    mut units: Query<
        (
            Entity,
            &NavAgent,
            Option<&ClassId>,
            &mut Transform,
            &mut PathProgress,
        ),
        With<Mover>,
    >,
    mut index: Local<Neighbours>,
    mut roles: Local<Vec<Role>>,
    mut pushed_before: Local<EntityHashSet>,
) {
    let crowd = &settings.crowd;
    if !crowd.pushing {
        return;
    }
    index.clear();
    roles.clear();
    // Only a body that moved since the last frame's pushes (walked, was moved by the game, or
    // was pushed then) can have come to overlap another: the first pass starts from those.
    let mut active = Vec::new();
    for (entity, agent, class, transform, progress) in &mut units {
        // A unit that never had a path stands on the map under it.
        let at = transform.translation.truncate();
        let Some((map, nav)) = progress
            .map
            .and_then(|m| maps.get(m).ok())
            .or_else(|| maps.iter().find(|(_, nav)| nav.world_to_cell(at).is_some()))
        else {
            continue;
        };
        index.add(Member {
            entity,
            map,
            class: ClassId::of(class),
            body: Body {
                position: nav.world_to_grid(at),
                // Which way a unit on its way faces (the side a standing unit is shoved to).
                velocity: progress.heading,
                radius: agent.radius,
            },
        });
        let role = Role::of(progress.state);
        if role != Role::Exempt && (transform.is_changed() || pushed_before.contains(&entity)) {
            active.push(roles.len());
        }
        roles.push(role);
    }
    index.build(|map| {
        maps.get(map)
            .ok()
            .map(|(_, m)| m.grid().extent().ceil().as_uvec2())
    });
    let max_step = crowd.push_speed * time.delta_secs();
    let grid = |map: Entity, class: ClassId| {
        let nav = maps.get(map).ok()?.1;
        Some((nav.grid_of(class), nav.footprint_of(class)))
    };
    let moved = push(&mut index, &roles, active, crowd, max_step, grid);
    pushed_before.clear();
    for i in moved {
        let m = index.members()[i];
        let (Ok((_, nav)), Ok((_, _, _, mut transform, mut progress))) =
            (maps.get(m.map), units.get_mut(m.entity))
        else {
            continue;
        };
        pushed_before.insert(m.entity);
        let z = transform.translation.z;
        let before = nav.world_to_grid(transform.translation.truncate());
        transform.translation = nav.grid_to_world(m.body.position).extend(z);
        // Off the curve it walks: by an offset that fades as it walks on.
        if progress.leg.is_some() {
            progress.offset += m.body.position - before;
        }
    }
}

/// Pushes the indexed bodies apart ([`PASSES`] passes, the later ones only for deep overlaps,
/// each body moving at most `max_step` tiles a pass, never onto blocked cells of its map's
/// grid); returns the indices of the bodies moved. The first pass looks at the pairs of the bodies in `active` (those that moved since
/// they were last apart), the next ones at the pairs of the bodies the pass before moved (no
/// other pair can have come closer).
fn push<'g>(
    index: &mut Neighbours,
    roles: &[Role],
    mut active: Vec<usize>,
    crowd: &CrowdSettings,
    max_step: f32,
    grid: impl Fn(Entity, ClassId) -> Option<(&'g NavGrid, u8)>,
) -> Vec<usize> {
    let count = index.members().len();
    let max_radius = index
        .members()
        .iter()
        .map(|m| m.body.radius)
        .fold(0.0f32, f32::max);
    let mut moved = vec![false; count];
    let mut shift = vec![Vec2::ZERO; count];
    let mut is_active = vec![false; count];
    let mut touched = Vec::new();
    for pass in 0..PASSES {
        let slack = if pass < FULL_PASSES { 0.0 } else { DEEP };
        for &i in &active {
            is_active[i] = true;
        }
        for &i in &active {
            let me = index.members()[i];
            let reach = me.body.radius + max_radius;
            for j in index.near(me.map, me.body.position, reach) {
                // Each pair once: from its active end, or its lower one if both are active.
                if j == i || roles[j] == Role::Exempt || is_active[j] && j < i {
                    continue;
                }
                let other = index.members()[j].body;
                let gap = other.position - me.body.position;
                let overlap = me.body.radius + other.radius - gap.length();
                if overlap <= slack * (me.body.radius + other.radius) {
                    continue;
                }
                // Bodies on the same spot part along a direction of their own.
                let away = gap.try_normalize().unwrap_or_else(|| {
                    Vec2::from_angle(i as f32 * std::f32::consts::GOLDEN_RATIO * 2.0)
                });
                for (k, sign, mine, theirs, pusher) in [
                    (i, -1.0, roles[i], roles[j], j),
                    (j, 1.0, roles[j], roles[i], i),
                ] {
                    if shift[k] == Vec2::ZERO {
                        touched.push(k);
                    }
                    let dir = if mine == Role::Standing && theirs == Role::Underway {
                        aside(sign * away, index.members()[pusher].body.velocity)
                    } else {
                        sign * away
                    };
                    shift[k] += dir * overlap * share(mine, theirs, crowd);
                }
            }
        }
        for &i in &active {
            is_active[i] = false;
        }
        active.clear();
        for &i in &touched {
            let s = std::mem::take(&mut shift[i]);
            if s == Vec2::ZERO {
                continue;
            }
            let m = index.members()[i];
            let Some((grid, footprint)) = grid(m.map, m.class) else {
                continue;
            };
            let s = s.clamp_length_max(max_step);
            let p = m.body.position;
            // Against its class's grid, whose walls are grown by its footprint.
            let radius = wall_radius(m.body.radius, footprint);
            let clear = |q: Vec2| !overlaps_blocked(grid, q, radius);
            // The whole push, else sliding along the wall on one axis, else none.
            let Some(to) = [p + s, p + Vec2::new(s.x, 0.0), p + Vec2::new(0.0, s.y)]
                .into_iter()
                .find(|&q| clear(q))
            else {
                continue;
            };
            index.body_mut(i).position = to;
            moved[i] = true;
            active.push(i);
        }
        touched.clear();
        if active.is_empty() {
            break;
        }
    }
    (0..count).filter(|&i| moved[i]).collect()
}

/// The way a standing unit is shoved by a unit on its way facing `heading`, when pushing
/// straight would send it `away`: out of the mover's way to the side it stands on (the left one
/// if dead ahead), never along the mover's way, where it would be shoved ahead of it all along
/// its path. A wall in that way turns the push into a slide along it.
fn aside(away: Vec2, heading: Vec2) -> Vec2 {
    let Some(h) = heading.try_normalize() else {
        return away;
    };
    let ahead = away.dot(h);
    if ahead <= 0.0 {
        return away;
    }
    let side = away - h * ahead;
    let side = side.try_normalize().unwrap_or(h.perp());
    (side + away * 0.5).normalize_or(side)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Cell;

    fn member(n: u32, x: f32, y: f32) -> Member {
        Member {
            entity: Entity::from_raw_u32(n).unwrap(),
            map: Entity::from_raw_u32(1).unwrap(),
            class: ClassId::DEFAULT,
            body: Body {
                position: Vec2::new(x, y),
                velocity: Vec2::ZERO,
                radius: 0.35,
            },
        }
    }

    fn index(grid: &NavGrid, members: &[Member]) -> Neighbours {
        let mut n = Neighbours::default();
        for &m in members {
            n.add(m);
        }
        n.build(|_| Some(UVec2::new(grid.width(), grid.height())));
        n
    }

    #[test]
    fn a_unit_on_its_way_pushes_a_standing_one_aside() {
        let grid = NavGrid::new(8, 8).unwrap();
        let mut n = index(&grid, &[member(2, 3.5, 3.5), member(3, 3.9, 3.5)]);
        let crowd = CrowdSettings::default();
        let roles = [Role::Underway, Role::Standing];
        let moved = push(&mut n, &roles, vec![0, 1], &crowd, 1.0, |_, _| {
            Some((&grid, 0))
        });
        assert_eq!(moved, vec![0, 1]);
        let (a, b) = (n.members()[0].body.position, n.members()[1].body.position);
        assert!(a.distance(b) >= 0.7 - 1e-3, "pushed apart: {a} {b}");
        // The standing unit took most of the push.
        assert!((b.x - 3.9) > 3.0 * (3.5 - a.x), "{a} {b}");
    }

    #[test]
    fn pushes_never_move_a_body_onto_a_blocked_cell() {
        let mut grid = NavGrid::new(8, 8).unwrap();
        for y in 0..8 {
            grid.set_walkable(Cell::new(4, y), false).unwrap();
        }
        // A standing unit against the wall, pushed toward it from the left, and slid along it.
        let mut n = index(&grid, &[member(2, 3.2, 3.6), member(3, 3.64, 3.5)]);
        let crowd = CrowdSettings::default();
        let roles = [Role::Underway, Role::Standing];
        for _ in 0..20 {
            push(&mut n, &roles, vec![0, 1], &crowd, 0.1, |_, _| {
                Some((&grid, 0))
            });
        }
        for m in n.members() {
            assert!(!overlaps_blocked(
                &grid,
                m.body.position,
                m.body.radius - 2e-3
            ));
        }
    }

    #[test]
    fn units_walking_through_are_left_alone() {
        let grid = NavGrid::new(8, 8).unwrap();
        let mut n = index(&grid, &[member(2, 3.5, 3.5), member(3, 3.6, 3.5)]);
        let crowd = CrowdSettings::default();
        let moved = push(
            &mut n,
            &[Role::Exempt, Role::Standing],
            vec![1],
            &crowd,
            1.0,
            |_, _| Some((&grid, 0)),
        );
        assert!(moved.is_empty());
    }
}
