//! avian2d integration (feature `avian`): units that are physics bodies walk their paths through
//! their [`LinearVelocity`], and a map's blocked cells can stand in the physics world as one
//! static body, merged into rectangles and rebuilt when the grid is edited.
//!
//! A unit that is an avian body carries a [`DesiredVelocity`]: movement computes the velocity it
//! wants (path, turns, crowd rules, pushes) and [`TilepathAvianPlugin`] copies it to the body's
//! `LinearVelocity` (and its facing to `Rotation`); the physics step moves the body, and its
//! `Transform` is read back as its position next frame. Run the plugin group in `FixedUpdate`
//! (`TilepathPlugins::in_schedule(FixedUpdate)`), so each physics step follows one movement tick.
//!
//! Keep the plugin's pushing on (`CrowdSettings::pushing`, the default): its pushes go into the
//! velocity and part crowds sideways, as they do bodies it moves itself, while the contacts keep
//! bodies from overlapping. With contacts alone, crowds meeting in a gate press against each
//! other and stay there (`examples/avian.rs`: 23 of 100 bodies arrived, against all 100 with
//! pushing). Give unit bodies `Friction::ZERO`, so two pressed together slide past each other,
//! and consider `SubstepCount(12)`: bodies pressed by a crowd then sink into walls about half as
//! deep (0.07-0.08 tiles at most with 1,000 bodies, against 0.11-0.14 with avian's default 6),
//! for about a tenth more frame time.
//! The crowd's last resort, a unit pressed in a jam walking through the others for a moment,
//! works for bodies too: while a unit walks through, its collider is disabled (it still keeps
//! off walls, as the plugin's own units do), and it is enabled again once the unit overlaps no
//! other unit.
//!
//! ```
//! use avian2d::prelude::*;
//! use bevy::prelude::*;
//! use bevy_tilepath::DesiredVelocity;
//! use bevy_tilepath::avian::NavWallColliders;
//! use bevy_tilepath::prelude::*;
//!
//! let mut app = App::new();
//! // With the feature, the group has `TilepathAvianPlugin`.
//! app.add_plugins((
//!     MinimalPlugins,
//!     TransformPlugin,
//!     PhysicsPlugins::default(),
//!     TilepathPlugins::in_schedule(FixedUpdate),
//! ))
//! .insert_resource(Gravity::ZERO);
//! let mut grid = NavGrid::new(16, 16).unwrap();
//! grid.set_walkable(Cell::new(8, 8), false).unwrap();
//! app.world_mut()
//!     .spawn((NavMap::new(grid, Vec2::ZERO, Vec2::ONE), NavWallColliders));
//! app.world_mut().spawn((
//!     Transform::from_xyz(1.5, 1.5, 0.0),
//!     Mover::default(),
//!     DesiredVelocity::default(),
//!     RigidBody::Dynamic,
//!     Collider::circle(0.3),
//!     LockedAxes::ROTATION_LOCKED,
//!     // Bodies slide past each other; with friction two pressed together stick.
//!     Friction::ZERO,
//!     PathRequest::to_cell(Cell::new(14, 14)),
//! ));
//! // `App::run` finishes the plugins' set-up; an app updated by hand calls these first.
//! app.finish();
//! app.cleanup();
//! app.update();
//! ```

use avian2d::collider_tree::ColliderTrees;
use avian2d::prelude::*;
use bevy::math::Affine2;
use bevy::prelude::*;

use crate::core::{Cell, NavGrid};
use crate::plugin::map::NavMap;
use crate::plugin::movement::{DesiredVelocity, PathProgress};
use crate::plugin::schedule::{Step, TilepathSchedule, TilepathSystems};

/// Copies units' [`DesiredVelocity`] to their avian `LinearVelocity` and `Rotation` after
/// movement, disables the colliders of units walking through others (`ColliderDisabled`, until
/// they are out of them), and keeps [`NavWallColliders`] in step with their maps' grids; part of
/// [`TilepathPlugins`](crate::TilepathPlugins) with the `avian` feature.
#[derive(Default)]
pub struct TilepathAvianPlugin {
    /// The schedule of the plugin group (the same as [`TilepathPlugins`](crate::TilepathPlugins)'s).
    pub schedule: TilepathSchedule,
}

impl Plugin for TilepathAvianPlugin {
    fn build(&self, app: &mut App) {
        let schedule = self.schedule.configure(app);
        app.register_type::<NavWallColliders>()
            .register_type::<NavWallMargin>()
            .add_systems(
                schedule,
                (
                    drive_bodies,
                    // Only with avian's physics in the app (its spatial queries need it).
                    ghost_bodies.run_if(resource_exists::<ColliderTrees>),
                    build_walls,
                )
                    .chain()
                    .in_set(TilepathSystems::Last)
                    .before(Step::Checksum),
            );
    }
}

/// On a [`NavMap`] entity: the map's blocked cells become a static avian body (merged into
/// rectangles, the map's edges closed too), rebuilt whenever the grid is edited or the map
/// placed anew. Square grids
/// only (any placement: scaled, rotated or isometric); hexagonal maps get none, with a warning.
/// Blocked cells are those of the shared grid: what only a class cannot cross (forest for
/// tanks) stays open to bodies.
#[derive(Component, Clone, Copy, Debug, Default, Reflect)]
#[reflect(Component, Default)]
pub struct NavWallColliders;

/// Beside [`NavWallColliders`]: how far (tiles) the wall colliders reach out past the blocked
/// cells (default none). A physics solver lets bodies pressed by a crowd sink into colliders by
/// a small slop (avian with 12 substeps: up to 0.08 tiles with 1,000 bodies); a margin at least
/// that deep keeps the bodies off the blocked cells themselves, at the cost of every passage
/// being twice the margin narrower.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Reflect)]
#[reflect(Component, Default)]
pub struct NavWallMargin(pub f32);

/// The static body built for a map's [`NavWallColliders`]: which map, and the grid version and
/// placement it was built from.
#[derive(Component, Debug)]
struct Walls {
    map: Entity,
    version: u64,
    placement: Affine2,
    margin: f32,
}

impl Walls {
    /// The walls of `map` (its entity `entity`) as they are now.
    fn of(entity: Entity, map: &NavMap, margin: Option<&NavWallMargin>) -> Self {
        Walls {
            map: entity,
            version: map.grid().version(),
            placement: map.placement(),
            // Never negative or not a number: the colliders cover the blocked cells at least.
            margin: margin.map_or(0.0, |m| m.0).max(0.0),
        }
    }
}

/// A unit body whose collider the plugin disabled while it walks through others (the crowd's
/// last resort: a body pressed in a jam passes through the others for a moment, as the
/// plugin's own units do), until it overlaps no other unit.
#[derive(Component)]
struct Ghost;

/// Sets each unit body's velocity and facing to those movement wants.
fn drive_bodies(mut bodies: Query<(&DesiredVelocity, &mut LinearVelocity, Option<&mut Rotation>)>) {
    for (desired, mut velocity, rotation) in &mut bodies {
        velocity.0 = desired.velocity;
        if let Some(mut rotation) = rotation
            && desired.facing != Vec2::ZERO
        {
            *rotation = Rotation::from_sin_cos(desired.facing.y, desired.facing.x);
        }
    }
}

/// Disables the collider of a unit walking through others, and enables it again once the unit
/// walks normally and overlaps no other unit (a body coming back inside another would be thrown
/// out of it, and others into walls).
fn ghost_bodies(
    mut commands: Commands,
    bodies: Query<
        (
            Entity,
            &PathProgress,
            Has<Ghost>,
            Option<(&Collider, &Position)>,
        ),
        With<DesiredVelocity>,
    >,
    spatial: SpatialQuery,
) {
    for (entity, progress, ghost, shape) in &bodies {
        let through = progress.state.walking_through_from().is_some();
        if through && !ghost {
            commands.entity(entity).insert((Ghost, ColliderDisabled));
        } else if !through && ghost {
            let inside = shape.is_some_and(|(collider, at)| {
                let filter = SpatialQueryFilter::from_excluded_entities([entity]);
                spatial
                    .shape_intersections(collider, at.0, 0.0, &filter)
                    .into_iter()
                    .any(|e| bodies.contains(e))
            });
            if !inside {
                commands
                    .entity(entity)
                    .remove::<(Ghost, ColliderDisabled)>();
            }
        }
    }
}

/// Builds the wall bodies of maps with [`NavWallColliders`], again when their grids change, and
/// despawns those of maps gone or without the marker.
fn build_walls(
    mut commands: Commands,
    maps: Query<(Entity, &NavMap, Option<&NavWallMargin>), With<NavWallColliders>>,
    mut walls: Query<(Entity, &mut Walls, &mut Collider)>,
    mut warned: Local<bool>,
) {
    let mut built = Vec::new();
    for (entity, mut wall, mut collider) in &mut walls {
        let Ok((_, map, margin)) = maps.get(wall.map) else {
            commands.entity(entity).despawn();
            continue;
        };
        built.push(wall.map);
        // Edited, placed anew (a tilemap moved, scaled or turned), or given another margin.
        let now = Walls::of(wall.map, map, margin);
        if (wall.version, wall.placement, wall.margin) != (now.version, now.placement, now.margin) {
            *collider = wall_collider(map, now.margin);
            *wall = now;
        }
    }
    for (entity, map, margin) in &maps {
        if built.contains(&entity) {
            continue;
        }
        if map.grid().is_hex() {
            if !*warned {
                warn!("bevy_tilepath: NavWallColliders on a hexagonal map: no colliders built");
                *warned = true;
            }
            continue;
        }
        commands.spawn((
            Walls::of(entity, map, margin),
            RigidBody::Static,
            wall_collider(map, Walls::of(entity, map, margin).margin),
            Transform::default(),
        ));
    }
}

/// One compound collider: a convex quadrilateral per rectangle of blocked cells, and one per
/// edge of the map (a cell wide, outside it), each grown by `margin` tiles, in world space.
fn wall_collider(map: &NavMap, margin: f32) -> Collider {
    let grid = map.grid();
    let (w, h) = (grid.width() as i32, grid.height() as i32);
    let mut rects = blocked_rectangles(grid);
    rects.extend([
        (IVec2::new(-1, -1), IVec2::new(w + 1, 0)),
        (IVec2::new(-1, h), IVec2::new(w + 1, h + 1)),
        (IVec2::new(-1, 0), IVec2::new(0, h)),
        (IVec2::new(w, 0), IVec2::new(w + 1, h)),
    ]);
    let shapes: Vec<(Vec2, Rotation, Collider)> = rects
        .into_iter()
        .filter_map(|(min, max)| {
            let (min, max) = (min.as_vec2() - margin, max.as_vec2() + margin);
            let corners = [
                Vec2::new(min.x, min.y),
                Vec2::new(max.x, min.y),
                Vec2::new(max.x, max.y),
                Vec2::new(min.x, max.y),
            ]
            .map(|c| map.grid_to_world(c));
            let center = corners.iter().copied().sum::<Vec2>() / 4.0;
            let local = corners.iter().map(|&c| c - center).collect();
            Some((center, Rotation::IDENTITY, Collider::convex_hull(local)?))
        })
        .collect();
    Collider::compound(shapes)
}

/// The grid's blocked cells as rectangles `[min, max)` of cells: runs along each row, each
/// merged with the run of the same columns in the row below when there is one.
pub fn blocked_rectangles(grid: &NavGrid) -> Vec<(IVec2, IVec2)> {
    let (w, h) = (grid.width() as i32, grid.height() as i32);
    let mut done: Vec<(IVec2, IVec2)> = Vec::new();
    // Rectangles still growing: they end at the row before this one.
    let mut open: Vec<(IVec2, IVec2)> = Vec::new();
    for y in 0..h {
        let mut runs = Vec::new();
        let mut x = 0;
        while x < w {
            if grid.is_walkable(Cell::new(x, y)) {
                x += 1;
                continue;
            }
            let start = x;
            while x < w && !grid.is_walkable(Cell::new(x, y)) {
                x += 1;
            }
            runs.push((start, x));
        }
        let mut next = Vec::with_capacity(runs.len());
        for (x0, x1) in runs {
            match open
                .iter()
                .position(|(min, max)| min.x == x0 && max.x == x1)
            {
                Some(i) => {
                    let (min, _) = open.swap_remove(i);
                    next.push((min, IVec2::new(x1, y + 1)));
                }
                None => next.push((IVec2::new(x0, y), IVec2::new(x1, y + 1))),
            }
        }
        done.append(&mut open);
        open = next;
    }
    done.append(&mut open);
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_rectangles_cover_every_blocked_cell_once() {
        let mut grid = NavGrid::new(12, 9).unwrap();
        let blocked = [
            (2, 1),
            (3, 1),
            (2, 2),
            (3, 2),
            (2, 3),
            (3, 3),
            (7, 0),
            (7, 1),
            (8, 1),
            (11, 8),
            (0, 8),
            (1, 8),
        ];
        for (x, y) in blocked {
            grid.set_walkable(Cell::new(x, y), false).unwrap();
        }
        let rects = blocked_rectangles(&grid);
        for cell in grid.cells().chain(blocked.map(|(x, y)| Cell::new(x, y))) {
            let covering = rects
                .iter()
                .filter(|(min, max)| cell.cmpge(*min).all() && cell.cmplt(*max).all())
                .count();
            let want = usize::from(!grid.is_walkable(cell));
            assert_eq!(covering, want, "{cell}");
        }
        // The 2 x 3 block is one rectangle.
        assert!(rects.contains(&(IVec2::new(2, 1), IVec2::new(4, 4))));
        assert_eq!(rects.len(), 5, "{rects:?}");
    }
}
