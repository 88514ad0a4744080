//! The navigation map: a [`NavGrid`] living on an entity, with its place in the world.

use std::sync::Arc;

use bevy::math::Affine2;
use bevy::prelude::*;

use crate::core::{
    Cell, ClassError, ClassGrid, GridError, Knowledge, Link, LinkError, LinkId, NavGrid,
};
use crate::plugin::agent::NavAgent;
use crate::plugin::classes::{
    ClassId, ClassKey, ClassParts, HeldKeys, NavClasses, PlayerId, UnitClass, class_key,
};
use crate::plugin::settings::TilepathSettings;

pub(crate) mod jump_tables;
pub(crate) mod link_tables;
pub(crate) mod links;
#[cfg(feature = "serialize")]
pub mod saved;

/// A navigation grid on a map entity, with its place in the world: an affine map from grid
/// space (cell `(x, y)` covers `x..x + 1` by `y..y + 1`) to world space. [`NavMap::new`] places
/// cell `(x, y)` on the world rectangle from `origin + (x, y) * tile_size` to
/// `origin + (x + 1, y + 1) * tile_size`; [`NavMap::with_placement`] takes any affine map, so a
/// map can be moved, scaled and rotated about z (a scaled or rotated tilemap, say).
///
/// The grid is shared copy-on-write with worker searches: reading is free, and an edit copies
/// the grid only while a worker still holds the old snapshot. Edit through [`NavMap::set_terrain`]
/// and [`NavMap::set_walkable`] so the plugin knows which cells changed this frame (units whose
/// remaining path comes near one are repathed, except where only walls went up and the body
/// can still walk its waypoints).
///
/// Beside the shared grid, a map keeps the grid of every unit class in use
/// ([`UnitClass`], units wider than a tile, and under fog of war each player's
/// units): derived from the shared one and brought up to date by the same edits, cell by cell,
/// and, for a player's, by what its units see ([`NavMap::knowledge`]).
///
/// Saved games: with the `serialize` feature a map is saved whole through reflection (its
/// grid's terrain and penalties, its placement, and what each player has seen), as a compact
/// value of its own (see `NavMapData`); its class grids are rebuilt when it is loaded.
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque, Clone, Debug)]
#[cfg_attr(feature = "serialize", reflect(Component, Serialize, Deserialize))]
pub struct NavMap {
    grid: Arc<NavGrid>,
    /// The grid of class `ClassId(k + 1)` at `k`.
    classes: Vec<ClassEntry>,
    /// What each player has seen (fog of war), for the player's class grids made later.
    knowledge: Vec<(u8, Knowledge)>,
    /// Cells of class grids that a player's units saw worse than assumed (with their terrain
    /// now, `0` blocked), since the plugin last handled them (it does every frame).
    revealed: Vec<(ClassId, Cell, u8)>,
    /// Cells of class grids changed by edits since the plugin last handled changes.
    class_changed: Vec<(ClassId, Cell)>,
    /// Grid space to world space, and back.
    to_world: Affine2,
    to_grid: Affine2,
    changed: Vec<Cell>,
    /// Links that became crossable since the plugin last handled changes (added open, or
    /// opened): units whose way they may shorten search again.
    opened_links: Vec<Link>,
    /// The links placed by [`NavLink`](links::NavLink) entities (a saved map leaves them out:
    /// the entities bring them back).
    entity_links: Vec<LinkId>,
}

impl NavMap {
    /// A map whose cell `(0, 0)` starts at `origin` with cells of `tile_size` world units.
    pub fn new(grid: NavGrid, origin: Vec2, tile_size: Vec2) -> Self {
        Self::with_placement(
            grid,
            Affine2::from_scale_angle_translation(tile_size, 0.0, origin),
        )
    }

    /// The map of a waypoint graph ([`WaypointGraph`](crate::core::WaypointGraph)): units walk
    /// its ways from waypoint to waypoint, each at the world position of its cell's centre
    /// (order them to a waypoint with [`BuiltWaypoints::cell`](crate::core::BuiltWaypoints::cell)).
    ///
    /// ```
    /// use bevy::prelude::*;
    /// use bevy_tilepath::core::WaypointGraph;
    /// use bevy_tilepath::prelude::*;
    ///
    /// let mut graph = WaypointGraph::new(10.0);
    /// let town = graph.add_waypoint(Vec2::new(0.0, 0.0));
    /// let port = graph.add_waypoint(Vec2::new(400.0, 300.0));
    /// graph.add_way(town, port).unwrap();
    /// let built = graph.build().unwrap();
    /// let map = NavMap::from_waypoints(&built);
    /// assert!(map.cell_to_world(built.cell(port)).distance(Vec2::new(400.0, 300.0)) < 10.0);
    /// ```
    pub fn from_waypoints(built: &crate::core::BuiltWaypoints) -> Self {
        Self::new(built.grid.clone(), built.origin, Vec2::splat(built.spacing))
    }

    /// A map placed in the world by `to_world`, from grid space (cell units, see
    /// [`NavGrid::cell_center`]; on hexagonal grids neighbouring centres are one unit apart) to
    /// world space. It must be invertible (no zero scale); a
    /// singular one is replaced by the identity, with a warning.
    pub fn with_placement(grid: NavGrid, to_world: Affine2) -> Self {
        let mut map = NavMap {
            grid: Arc::new(grid),
            classes: Vec::new(),
            knowledge: Vec::new(),
            revealed: Vec::new(),
            class_changed: Vec::new(),
            to_world: Affine2::IDENTITY,
            to_grid: Affine2::IDENTITY,
            changed: Vec::new(),
            opened_links: Vec::new(),
            entity_links: Vec::new(),
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
        Some(entry.grid.as_ref().map(|c| &**c).map_err(|e| *e))
    }

    /// The footprint of `class` on this map (`0` for the default class and classes it cannot
    /// have).
    pub(crate) fn footprint_of(&self, class: ClassId) -> u8 {
        match self.class_grid(class) {
            Some(Ok(c)) => c.class().footprint,
            _ => 0,
        }
    }

    /// The radius a body of `radius` tiles of `class` is checked with against
    /// [`NavMap::grid_of`] `class` (see [`MoveClass::wall_radius`](crate::core::MoveClass::wall_radius)).
    pub(crate) fn wall_radius_of(&self, class: ClassId, radius: f32) -> f32 {
        crate::core::wall_radius(self.grid_of(class), radius, self.footprint_of(class))
    }

    /// A shared snapshot of the grid of `class` (for worker searches).
    pub(crate) fn snapshot_of(&self, class: ClassId) -> GridSnapshot {
        match class
            .0
            .checked_sub(1)
            .and_then(|k| self.classes.get(k as usize))
        {
            Some(ClassEntry { grid: Ok(c), .. }) => GridSnapshot::Class(c.clone()),
            _ => GridSnapshot::Shared(self.grid.clone()),
        }
    }

    /// What `player`'s units have seen of this map (fog of war; `None` before the player's first
    /// unit planned on it).
    pub fn knowledge(&self, player: u8) -> Option<&Knowledge> {
        self.knowledge
            .iter()
            .find(|(p, _)| *p == player)
            .map(|(_, k)| k)
    }

    /// Whether [`NavMap::ensure_classes`] has work to do.
    pub(crate) fn needs_classes(&self, classes: &[ClassKey]) -> bool {
        self.classes.len() < classes.len() || self.classes.iter().any(|e| self.is_stale(e))
    }

    /// Whether `entry` was made for a grid of another size or other move rules than the map's.
    fn is_stale(&self, entry: &ClassEntry) -> bool {
        let (grid, ours) = (&*self.grid, entry.grid.as_ref());
        ours.is_ok_and(|c| {
            let g = c.grid();
            (g.width(), g.height(), g.rules()) != (grid.width(), grid.height(), grid.rules())
        })
    }

    /// Makes sure the map has a grid for every class in `classes` (`classes[k]` is
    /// `ClassId(k + 1)`; a player's unseen cells assumed of kind `assumed`), and rebuilds those
    /// made for another size or other move rules (the shared grid was replaced through
    /// [`NavMap::grid_mut`]: what players had seen of the old one is forgotten).
    pub(crate) fn ensure_classes(&mut self, classes: &[ClassKey], assumed: u8) {
        let size = (self.grid.width(), self.grid.height());
        self.knowledge.retain(|(_, k)| k.size() == size);
        let stale: Vec<usize> = (0..self.classes.len())
            .filter(|&k| self.is_stale(&self.classes[k]))
            .collect();
        for k in stale {
            self.classes[k] = self.make_class(classes[k].clone(), assumed);
        }
        for key in classes.iter().skip(self.classes.len()) {
            let entry = self.make_class(key.clone(), assumed);
            self.classes.push(entry);
        }
    }

    /// The grid of `key`: with what its player has seen, if it has one.
    fn make_class(&mut self, key: ClassKey, assumed: u8) -> ClassEntry {
        let grid = &*self.grid;
        let made = match key.player {
            None => ClassGrid::new(grid, key.class),
            Some(p) => {
                let known = match self.knowledge.iter().find(|(q, _)| *q == p) {
                    Some((_, k)) => k.clone(),
                    None => {
                        let k = Knowledge::new(grid, assumed);
                        self.knowledge.push((p, k.clone()));
                        k
                    }
                };
                ClassGrid::with_knowledge(grid, key.class, known)
            }
        };
        ClassEntry {
            player: key.player,
            grid: made.map(Arc::new),
        }
    }

    /// The classes with a grid on this map: the default class (the shared grid) and each class
    /// with a grid of its own.
    fn grid_classes(&self) -> Vec<ClassId> {
        let own = self.classes.iter().enumerate();
        std::iter::once(ClassId::DEFAULT)
            .chain(own.filter_map(|(k, e)| e.grid.is_ok().then_some(ClassId(k as u16 + 1))))
            .collect()
    }

    /// Frees the jump table of `class`'s grid.
    fn drop_jump_table_of(&mut self, class: ClassId) {
        match self.class_entry_grid_mut(class) {
            Some(c) => c.drop_jump_table(),
            None => self.grid_mut().drop_jump_table(),
        }
    }

    /// Gives `class`'s grid a jump table built apart from it (see `jump_tables`). Writing the
    /// grid copies it if a search or a region map's build still reads it (7 ms on 1024 x 1024).
    fn install_jump_table_of(&mut self, class: ClassId, table: crate::core::BuiltJumpTable) {
        match self.class_entry_grid_mut(class) {
            Some(c) => c.install_jump_table(table),
            None => self.grid_mut().install_jump_table(table),
        };
    }

    /// `class`'s own grid, to write (`None` for the default class and classes without one).
    fn class_entry_grid_mut(&mut self, class: ClassId) -> Option<&mut ClassGrid> {
        let k = class.0.checked_sub(1)? as usize;
        match &mut self.classes.get_mut(k)?.grid {
            Ok(c) => Some(Arc::make_mut(c)),
            Err(_) => None,
        }
    }

    /// `player`'s units see `cells`: its knowledge and class grids learn their true kinds.
    /// Returns how many of them the player had not seen before. Cells of its class grids that
    /// turn out worse than assumed are kept for the repath on reveal.
    pub(crate) fn reveal(&mut self, player: u8, cells: &[Cell]) -> usize {
        let Some((_, known)) = self.knowledge.iter_mut().find(|(p, _)| *p == player) else {
            return 0;
        };
        let fresh: Vec<Cell> = cells.iter().copied().filter(|&c| known.reveal(c)).collect();
        if fresh.is_empty() {
            return 0;
        }
        for (k, entry) in self.classes.iter_mut().enumerate() {
            if entry.player != Some(player) {
                continue;
            }
            if let Ok(c) = &mut entry.grid {
                let changed = Arc::make_mut(c).reveal(&self.grid, &fresh);
                let id = ClassId(k as u16 + 1);
                self.revealed
                    .extend(changed.into_iter().map(|(c, t)| (id, c, t)));
            }
        }
        fresh.len()
    }

    /// Class grid cells seen worse than assumed since the plugin last took them.
    pub(crate) fn take_revealed(&mut self) -> Vec<(ClassId, Cell, u8)> {
        std::mem::take(&mut self.revealed)
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

    /// Adds a link between two cells ([`Link`]: a door, a one-way drop, a teleporter), on the
    /// shared grid and every class grid, with the same handle. Units whose remaining path
    /// comes near either end search again, as after an edit of those cells, and so do units
    /// whose way an open link may shorten (see [`NavMap::set_link_open`]).
    pub fn add_link(&mut self, link: Link) -> Result<LinkId, LinkError> {
        let id = self.grid_mut().add_link(link)?;
        self.links_changed(&link);
        if link.open {
            self.opened_links.push(link);
        }
        Ok(id)
    }

    /// Removes a link; the link it was.
    pub fn remove_link(&mut self, id: LinkId) -> Result<Link, LinkError> {
        let link = self.grid_mut().remove_link(id)?;
        self.entity_links.retain(|&e| e != id);
        self.links_changed(&link);
        Ok(link)
    }

    /// [`NavMap::add_link`] for a [`NavLink`](links::NavLink) entity's link.
    pub(crate) fn add_entity_link(&mut self, link: Link) -> Result<LinkId, LinkError> {
        let id = self.add_link(link)?;
        self.entity_links.push(id);
        Ok(id)
    }

    /// Whether the link `id` was placed by a [`NavLink`](links::NavLink) entity.
    #[cfg(feature = "serialize")]
    pub(crate) fn is_entity_link(&self, id: LinkId) -> bool {
        self.entity_links.contains(&id)
    }

    /// Opens or closes a link (a door), on every grid of the map. Units whose remaining path
    /// comes near either end search again; so, when it opens, do units far from it whose way
    /// it may shorten: those for which the least a path through it could cost
    /// ([`NavGrid::cost_bound`](crate::core::NavGrid::cost_bound) to its entry, the crossing,
    /// from its exit to the goal) is below what their path still costs.
    pub fn set_link_open(&mut self, id: LinkId, open: bool) -> Result<(), LinkError> {
        let before = self.grid.link(id).copied();
        self.grid_mut().set_link_open(id, open)?;
        if let Some(link) = before.filter(|l| l.open != open) {
            self.links_changed(&link);
            if open {
                self.opened_links.push(Link { open, ..link });
            }
        }
        Ok(())
    }

    /// The links that became crossable since the plugin last handled changes.
    pub(crate) fn take_opened_links(&mut self) -> Vec<Link> {
        std::mem::take(&mut self.opened_links)
    }

    /// After a change to the shared grid's links: the class grids follow, and the link's ends
    /// count as changed cells.
    fn links_changed(&mut self, link: &Link) {
        for entry in &mut self.classes {
            if let Ok(c) = &mut entry.grid {
                Arc::make_mut(c).follow_links(&self.grid);
            }
        }
        self.mark_changed(link.from);
        self.mark_changed(link.to);
    }

    /// Records that `cell` changed (after editing its terrain or penalty through
    /// [`NavMap::grid_mut`]), and brings the class grids up to date around it.
    pub fn mark_changed(&mut self, cell: Cell) {
        for (k, entry) in self.classes.iter_mut().enumerate() {
            if let Ok(c) = &mut entry.grid {
                let id = ClassId(k as u16 + 1);
                let changed = Arc::make_mut(c).update(&self.grid, &[cell]);
                self.class_changed
                    .extend(changed.into_iter().map(|c| (id, c)));
            }
        }
        self.changed.push(cell);
    }

    /// Cells of `class`'s grid that edits changed since the plugin last handled changes (for
    /// the default class, [`NavMap::changed_cells`]).
    pub(crate) fn class_changed_cells(&self, class: ClassId) -> Vec<Cell> {
        if class == ClassId::DEFAULT {
            return self.changed.clone();
        }
        self.class_changed
            .iter()
            .filter(|(k, _)| *k == class)
            .map(|&(_, c)| c)
            .collect()
    }

    /// The classes of this map whose grid follows edits only (no player's knowledge): those a
    /// region map can be kept for. The default class first.
    pub(crate) fn classes_without_fog(&self) -> impl Iterator<Item = ClassId> + '_ {
        let others = self.classes.iter().enumerate().filter_map(|(k, e)| {
            (e.player.is_none() && e.grid.is_ok()).then_some(ClassId(k as u16 + 1))
        });
        std::iter::once(ClassId::DEFAULT).chain(others)
    }

    /// Cells changed since the plugin last handled changes (it clears them every frame).
    pub fn changed_cells(&self) -> &[Cell] {
        &self.changed
    }

    pub(crate) fn take_changed(&mut self) -> Vec<Cell> {
        self.class_changed.clear();
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

/// A class grid of a map, or why the map cannot have it.
#[derive(Clone, Debug)]
struct ClassEntry {
    /// The player whose knowledge it plans with.
    player: Option<u8>,
    grid: Result<Arc<ClassGrid>, ClassError>,
}

/// What [`resolve_classes`] reads of a unit.
type UnitParts = (Entity, ClassParts<'static>, Option<&'static ClassId>);

/// What changes a unit's class.
type ClassChanged = Or<(
    Changed<UnitClass>,
    Changed<NavAgent>,
    Changed<PlayerId>,
    Changed<HeldKeys>,
)>;

/// Resolves the class of units whose [`UnitClass`], [`NavAgent`], [`PlayerId`] or [`HeldKeys`]
/// changed (or was removed), of every unit when fog of war is turned on or off, and gives every
/// map a grid for every class in use.
#[allow(clippy::too_many_arguments)]
pub(crate) fn resolve_classes(
    mut registry: ResMut<NavClasses>,
    settings: Res<TilepathSettings>,
    mut fog_was: Local<bool>,
    changed: Query<UnitParts, ClassChanged>,
    mut removed_class: RemovedComponents<UnitClass>,
    mut removed_player: RemovedComponents<PlayerId>,
    mut removed_keys: RemovedComponents<HeldKeys>,
    units: Query<UnitParts>,
    mut maps: Query<&mut NavMap>,
    mut commands: Commands,
) {
    let fog = settings.fog.enabled;
    let mut set = |(entity, parts, id): (Entity, ClassParts, Option<&ClassId>),
                   commands: &mut Commands| {
        let new = registry.intern(class_key(parts, fog));
        if ClassId::of(id) != new {
            commands.entity(entity).insert(new);
        }
    };
    if std::mem::replace(&mut *fog_was, fog) != fog {
        for parts in &units {
            set(parts, &mut commands);
        }
    } else {
        for parts in &changed {
            set(parts, &mut commands);
        }
        let removed = removed_class.read().chain(removed_player.read());
        for entity in removed.chain(removed_keys.read()) {
            if let Ok(parts) = units.get(entity) {
                set(parts, &mut commands);
            }
        }
    }
    for mut map in &mut maps {
        if map.needs_classes(&registry.classes) {
            map.ensure_classes(&registry.classes, settings.fog.assumed);
        }
    }
}
