//! Fog of war (Lester's units that do not know the whole map): units of a [`PlayerId`] reveal
//! the cells within their [`Sight`] to their player, whose class grids plan with what it has seen
//! (see [`FogSettings`](crate::FogSettings)). Cells revealed other than assumed repath the
//! player's units whose paths cross them (`queue/repath.rs`).

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;

use super::movement::state::PathProgress;
use crate::core::Cell;
use crate::plugin::classes::PlayerId;
use crate::plugin::map::NavMap;
use crate::plugin::settings::TilepathSettings;

/// How far a unit sees, in tiles (default [`FogSettings::sight`](crate::FogSettings::sight)).
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Component)]
pub struct Sight {
    /// Radius in tiles: cells whose centers lie within it of the unit's cell's center are seen.
    pub radius: f32,
}

/// What fog of war has done so far.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Resource)]
pub struct FogStats {
    /// Cells newly seen by a player, summed over players and maps.
    pub revealed: u64,
}

/// Each unit of a player reveals the cells within its sight to its player, when it stands on a
/// cell it did not stand on when it last looked (a unit standing still has seen it all).
pub(crate) fn reveal_fog(
    settings: Res<TilepathSettings>,
    mut stats: ResMut<FogStats>,
    mut maps: Query<(Entity, &mut NavMap)>,
    units: Query<(
        Entity,
        &Transform,
        &PlayerId,
        Option<&Sight>,
        Option<&PathProgress>,
    )>,
    mut looked: Local<EntityHashMap<(Entity, Cell)>>,
    mut cells: Local<Vec<Cell>>,
) {
    if !settings.fog.enabled {
        looked.clear();
        return;
    }
    looked.retain(|e, _| units.contains(*e));
    for (entity, transform, player, sight, progress) in &units {
        let at = transform.translation.truncate();
        // The map it walks on, or the one under it.
        let found = progress
            .and_then(|p| p.map)
            .and_then(|m| maps.get(m).ok().map(|(e, map)| (e, map.world_to_cell(at))))
            .or_else(|| {
                maps.iter()
                    .find_map(|(e, map)| map.world_to_cell(at).map(|c| (e, Some(c))))
            });
        let Some((map_entity, Some(here))) = found else {
            continue;
        };
        if looked.get(&entity) == Some(&(map_entity, here)) {
            continue;
        }
        let Ok((_, mut map)) = maps.get_mut(map_entity) else {
            continue;
        };
        if map.knowledge(player.0).is_none() {
            // The player's grids come with its first unit's class (next frame's resolve).
            continue;
        }
        looked.insert(entity, (map_entity, here));
        let radius = sight.map_or(settings.fog.sight, |s| s.radius).max(0.0);
        cells.clear();
        in_sight(map.grid(), here, radius, &mut cells);
        stats.revealed += map.reveal(player.0, &cells) as u64;
    }
}

/// The cells of `grid` whose centers lie within `radius` of `here`'s center.
fn in_sight(grid: &crate::core::NavGrid, here: Cell, radius: f32, out: &mut Vec<Cell>) {
    let center = grid.cell_center(here);
    // Axial hexagon rows shift by half a cell per row: a wider box of cells covers the disc.
    let reach = if grid.is_hex() {
        (radius * 1.6).ceil() as i32 + 1
    } else {
        radius.ceil() as i32
    };
    let r2 = radius * radius;
    for dy in -reach..=reach {
        for dx in -reach..=reach {
            let c = here + Cell::new(dx, dy);
            if grid.in_bounds(c) && grid.cell_center(c).distance_squared(center) <= r2 {
                out.push(c);
            }
        }
    }
}
