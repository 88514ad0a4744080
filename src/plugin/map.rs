//! The navigation map: a [`NavGrid`] living on an entity, with its place in the world.

use std::sync::Arc;

use bevy::prelude::*;

use crate::core::{Cell, GridError, NavGrid};

/// A navigation grid on a map entity, with its world transform: cell `(x, y)` covers the world
/// rectangle from `origin + (x, y) * tile_size` to `origin + (x + 1, y + 1) * tile_size`.
///
/// The grid is shared copy-on-write with worker searches: reading is free, and an edit copies
/// the grid only while a worker still holds the old snapshot. Edit through [`NavMap::set_terrain`]
/// and [`NavMap::set_walkable`] so the plugin knows which cells changed this frame (units whose
/// remaining path crosses one are repathed).
#[derive(Component, Clone, Debug)]
pub struct NavMap {
    grid: Arc<NavGrid>,
    /// World position of the outer corner of cell `(0, 0)`.
    pub origin: Vec2,
    /// World size of one cell.
    pub tile_size: Vec2,
    changed: Vec<Cell>,
}

impl NavMap {
    /// A map whose cell `(0, 0)` starts at `origin` with cells of `tile_size` world units.
    pub fn new(grid: NavGrid, origin: Vec2, tile_size: Vec2) -> Self {
        NavMap {
            grid: Arc::new(grid),
            origin,
            tile_size,
            changed: Vec::new(),
        }
    }

    /// The grid.
    pub fn grid(&self) -> &NavGrid {
        &self.grid
    }

    /// A shared snapshot of the grid (for worker searches).
    pub fn snapshot(&self) -> Arc<NavGrid> {
        self.grid.clone()
    }

    /// Mutable access to the whole grid (copied first if a worker holds a snapshot). Edits made
    /// this way are not tracked cell by cell: call [`NavMap::mark_changed`] for the cells you
    /// touch, or prefer [`NavMap::set_terrain`].
    pub fn grid_mut(&mut self) -> &mut NavGrid {
        Arc::make_mut(&mut self.grid)
    }

    /// Sets a cell's terrain cost (`0` blocks it) and records the change.
    pub fn set_terrain(&mut self, cell: Cell, terrain: u8) -> Result<(), GridError> {
        if self.grid.terrain(cell)? != terrain {
            self.grid_mut().set_terrain(cell, terrain)?;
            self.changed.push(cell);
        }
        Ok(())
    }

    /// Blocks or unblocks a cell and records the change.
    pub fn set_walkable(&mut self, cell: Cell, walkable: bool) -> Result<(), GridError> {
        if self.grid.is_walkable(cell) != walkable || !self.grid.in_bounds(cell) {
            self.grid_mut().set_walkable(cell, walkable)?;
            self.changed.push(cell);
        }
        Ok(())
    }

    /// Records that `cell` changed (after editing through [`NavMap::grid_mut`]).
    pub fn mark_changed(&mut self, cell: Cell) {
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
        g.is_finite()
            .then(|| g.floor())
            .filter(|f| f.abs().max_element() < i32::MAX as f32 / 2.0)
            .map(|f| f.as_ivec2())
    }

    /// A world position in grid space (cell units, see [`crate::core::cell_center`]).
    pub fn world_to_grid(&self, world: Vec2) -> Vec2 {
        (world - self.origin) / self.tile_size
    }

    /// A grid-space position in world space.
    pub fn grid_to_world(&self, grid: Vec2) -> Vec2 {
        self.origin + grid * self.tile_size
    }

    /// The world position of a cell's center.
    pub fn cell_to_world(&self, cell: Cell) -> Vec2 {
        self.grid_to_world(cell.as_vec2() + Vec2::splat(0.5))
    }

    /// World units per tile along x (units' speeds and radii are in tiles).
    pub fn tile_scale(&self) -> f32 {
        self.tile_size.x
    }
}
