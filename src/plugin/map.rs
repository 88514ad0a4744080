//! The navigation map: a [`NavGrid`] living on an entity, with its place in the world.

use std::sync::Arc;

use bevy::math::Affine2;
use bevy::prelude::*;

use crate::core::{Cell, ClassError, ClassGrid, GridError, MoveClass, NavGrid};
use crate::plugin::classes::ClassId;

/// A navigation grid on a map entity, with its place in the world: an affine map from grid
/// space (cell `(x, y)` covers `x..x + 1` by `y..y + 1`) to world space. [`NavMap::new`] places
/// cell `(x, y)` on the world rectangle from `origin + (x, y) * tile_size` to
/// `origin + (x + 1, y + 1) * tile_size`; [`NavMap::with_placement`] takes any affine map, so a
/// map can be moved, scaled and rotated about z (a scaled or rotated tilemap, say).
///
/// The grid is shared copy-on-write with worker searches: reading is free, and an edit copies
/// the grid only while a worker still holds the old snapshot. Edit through [`NavMap::set_terrain`]
/// and [`NavMap::set_walkable`] so the plugin knows which cells changed this frame (units whose
/// remaining path crosses one are repathed).
///
/// Beside the shared grid, a map keeps the grid of every unit class in use
/// ([`UnitClass`](crate::UnitClass), and units wider than a tile): derived from the shared one
/// and brought up to date by the same edits, cell by cell.
#[derive(Component, Clone, Debug)]
pub struct NavMap {
    grid: Arc<NavGrid>,
    /// The grid of class `ClassId(k + 1)` at `k` (or why it cannot be made).
    classes: Vec<Result<Arc<ClassGrid>, ClassError>>,
    /// Grid space to world space, and back.
    to_world: Affine2,
    to_grid: Affine2,
    changed: Vec<Cell>,
}

impl NavMap {
    /// A map whose cell `(0, 0)` starts at `origin` with cells of `tile_size` world units.
    pub fn new(grid: NavGrid, origin: Vec2, tile_size: Vec2) -> Self {
        Self::with_placement(
            grid,
            Affine2::from_scale_angle_translation(tile_size, 0.0, origin),
        )
    }

    /// A map placed in the world by `to_world`, from grid space (cell units, see
    /// [`NavGrid::cell_center`]; on hexagonal grids neighbouring centres are one unit apart) to
    /// world space. It must be invertible (no zero scale); a
    /// singular one is replaced by the identity, with a warning.
    pub fn with_placement(grid: NavGrid, to_world: Affine2) -> Self {
        let mut map = NavMap {
            grid: Arc::new(grid),
            classes: Vec::new(),
            to_world: Affine2::IDENTITY,
            to_grid: Affine2::IDENTITY,
            changed: Vec::new(),
        };
        map.set_placement(to_world);
        map
    }

    /// Places the map anew (the tilemap integration calls it when a tilemap's transform
    /// changes); see [`NavMap::with_placement`].
    pub fn set_placement(&mut self, to_world: Affine2) {
        let det = to_world.matrix2.determinant();
        if !det.is_finite() || det.abs() < 1e-12 || !to_world.translation.is_finite() {
            warn!("bevy_tilepath: a NavMap placement that cannot be inverted: {to_world:?}");
            (self.to_world, self.to_grid) = (Affine2::IDENTITY, Affine2::IDENTITY);
            return;
        }
        (self.to_world, self.to_grid) = (to_world, to_world.inverse());
    }

    /// The affine map from grid space to world space.
    pub fn placement(&self) -> Affine2 {
        self.to_world
    }

    /// World position of the outer corner of cell `(0, 0)`.
    pub fn origin(&self) -> Vec2 {
        self.to_world.translation
    }

    /// World size of one cell along the grid's x and y axes.
    pub fn tile_size(&self) -> Vec2 {
        Vec2::new(
            self.to_world.matrix2.x_axis.length(),
            self.to_world.matrix2.y_axis.length(),
        )
    }

    /// The world angle (radians, about z) of the grid's x axis.
    pub fn rotation(&self) -> f32 {
        let x = self.to_world.matrix2.x_axis;
        x.y.atan2(x.x)
    }

    /// A direction in grid space as a world direction (not normalised).
    pub fn grid_to_world_dir(&self, dir: Vec2) -> Vec2 {
        self.to_world.transform_vector2(dir)
    }

    /// The grid.
    pub fn grid(&self) -> &NavGrid {
        &self.grid
    }

    /// A shared snapshot of the grid (for worker searches).
    pub fn snapshot(&self) -> Arc<NavGrid> {
        self.grid.clone()
    }

    /// The grid units of class `class` plan and move on: the shared grid for the default class,
    /// else the class's own (the shared grid if the class has none on this map, see
    /// [`NavMap::class_grid`]).
    pub fn grid_of(&self, class: ClassId) -> &NavGrid {
        match self.class_grid(class) {
            Some(Ok(c)) => c.grid(),
            _ => &self.grid,
        }
    }

    /// The class grid of `class`: `None` for the default class (it uses the shared grid) and for
    /// classes not known to this map yet; an error for a class this map cannot have (a footprint
    /// wider than a cell on hexagons).
    pub fn class_grid(&self, class: ClassId) -> Option<Result<&ClassGrid, ClassError>> {
        let k = class.0.checked_sub(1)? as usize;
        let entry = self.classes.get(k)?;
        Some(entry.as_ref().map(|c| &**c).map_err(|e| *e))
    }

    /// A shared snapshot of the grid of `class` (for worker searches).
    pub(crate) fn snapshot_of(&self, class: ClassId) -> GridSnapshot {
        match class
            .0
            .checked_sub(1)
            .and_then(|k| self.classes.get(k as usize))
        {
            Some(Ok(c)) => GridSnapshot::Class(c.clone()),
            _ => GridSnapshot::Shared(self.grid.clone()),
        }
    }

    /// Whether [`NavMap::ensure_classes`] has work to do.
    pub(crate) fn needs_classes(&self, classes: &[MoveClass]) -> bool {
        let grid = &*self.grid;
        self.classes.len() < classes.len()
            || self.classes.iter().flatten().any(|c| {
                let g = c.grid();
                (g.width(), g.height(), g.rules()) != (grid.width(), grid.height(), grid.rules())
            })
    }

    /// Makes sure the map has a grid for every class in `classes` (`classes[k]` is
    /// `ClassId(k + 1)`), and rebuilds those made for another size or other move rules (the
    /// shared grid was replaced through [`NavMap::grid_mut`]).
    pub(crate) fn ensure_classes(&mut self, classes: &[MoveClass]) {
        let grid = &*self.grid;
        for entry in &mut self.classes {
            if let Ok(c) = entry {
                let g = c.grid();
                if (g.width(), g.height(), g.rules()) != (grid.width(), grid.height(), grid.rules())
                {
                    let class = c.class().clone();
                    *entry = ClassGrid::new(grid, class).map(Arc::new);
                }
            }
        }
        for class in classes.iter().skip(self.classes.len()) {
            self.classes
                .push(ClassGrid::new(grid, class.clone()).map(Arc::new));
        }
    }

    /// Mutable access to the whole grid (copied first if a worker holds a snapshot). Edits made
    /// this way are not tracked cell by cell: call [`NavMap::mark_changed`] for the cells you
    /// touch, or prefer [`NavMap::set_terrain`].
    pub fn grid_mut(&mut self) -> &mut NavGrid {
        Arc::make_mut(&mut self.grid)
    }

    /// Sets a cell's terrain kind (`0` blocks it; under the default class a kind is its cost)
    /// and records the change.
    pub fn set_terrain(&mut self, cell: Cell, terrain: u8) -> Result<(), GridError> {
        if self.grid.terrain(cell)? != terrain {
            self.grid_mut().set_terrain(cell, terrain)?;
            self.mark_changed(cell);
        }
        Ok(())
    }

    /// Blocks or unblocks a cell and records the change.
    pub fn set_walkable(&mut self, cell: Cell, walkable: bool) -> Result<(), GridError> {
        if self.grid.is_walkable(cell) != walkable || !self.grid.in_bounds(cell) {
            self.grid_mut().set_walkable(cell, walkable)?;
            self.mark_changed(cell);
        }
        Ok(())
    }

    /// Records that `cell` changed (after editing its terrain or penalty through
    /// [`NavMap::grid_mut`]), and brings the class grids up to date around it.
    pub fn mark_changed(&mut self, cell: Cell) {
        for c in self.classes.iter_mut().flatten() {
            Arc::make_mut(c).update(&self.grid, &[cell]);
        }
        self.changed.push(cell);
    }

    /// Cells changed since the plugin last handled changes (it clears them every frame).
    pub fn changed_cells(&self) -> &[Cell] {
        &self.changed
    }

    pub(crate) fn take_changed(&mut self) -> Vec<Cell> {
        std::mem::take(&mut self.changed)
    }

    /// The cell containing a world position (may be out of bounds; `None` if not finite).
    pub fn world_to_cell(&self, world: Vec2) -> Option<Cell> {
        let g = self.world_to_grid(world);
        (g.is_finite() && g.abs().max_element() < i32::MAX as f32 / 4.0)
            .then(|| self.grid.cell_at(g))
    }

    /// A world position in grid space (cell units, see [`NavGrid::cell_center`]).
    pub fn world_to_grid(&self, world: Vec2) -> Vec2 {
        self.to_grid.transform_point2(world)
    }

    /// A grid-space position in world space.
    pub fn grid_to_world(&self, grid: Vec2) -> Vec2 {
        self.to_world.transform_point2(grid)
    }

    /// The world position of a cell's center.
    pub fn cell_to_world(&self, cell: Cell) -> Vec2 {
        self.grid_to_world(self.grid.cell_center(cell))
    }

    /// World units per tile along the grid's x axis (units' speeds and radii are in tiles).
    pub fn tile_scale(&self) -> f32 {
        self.tile_size().x
    }
}

/// A worker's snapshot of the grid it searches: the shared grid or a class's.
#[derive(Clone, Debug)]
pub(crate) enum GridSnapshot {
    Shared(Arc<NavGrid>),
    Class(Arc<ClassGrid>),
}

impl std::ops::Deref for GridSnapshot {
    type Target = NavGrid;

    fn deref(&self) -> &NavGrid {
        match self {
            GridSnapshot::Shared(g) => g,
            GridSnapshot::Class(c) => c.grid(),
        }
    }
}
