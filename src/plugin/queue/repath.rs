//! Repath on edit: units whose remaining path crosses a cell edited this frame (through
//! [`NavMap::set_terrain`] or [`NavMap::set_walkable`]) search again for the same goal; the rest
//! keep their paths. How far a unit has got is read from the movement plugin's
//! [`PathProgress`] where there is one (the whole path counts otherwise).

use std::collections::{HashMap, HashSet};

use bevy::prelude::*;

use super::job::footprint_of;
use crate::core::Cell;
use crate::plugin::map::NavMap;
use crate::plugin::movement::PathProgress;
use crate::plugin::outcomes::NavPath;
use crate::plugin::request::{PathOrigin, PendingRequests, SubmitInternal};

/// Repaths units whose remaining corridor crosses a changed cell or its neighbours (a unit's body
/// may overlap a neighbour of the corridor cell it walks through; a wide unit's, cells as many
/// rings further as its footprint), or a cell its class can no longer enter.
pub(crate) fn repath_on_change(
    mut maps: Query<(Entity, &mut NavMap)>,
    units: Query<(Entity, &NavPath, Option<&PathProgress>)>,
    book: Res<PendingRequests>,
    mut commands: Commands,
) {
    for (map_entity, mut map) in &mut maps {
        if map.changed_cells().is_empty() {
            continue;
        }
        let changed = map.take_changed();
        // Cells within `reach` rings of a change, by reach.
        let mut near: HashMap<i32, HashSet<Cell>> = HashMap::new();
        for (entity, path, progress) in &units {
            if path.map != map_entity || book.contains(entity) {
                continue;
            }
            let grid = map.grid_of(path.class);
            let reach = 1 + footprint_of(&map, path.class) as i32;
            let near_changed = near.entry(reach).or_insert_with(|| {
                changed
                    .iter()
                    .flat_map(|&c| {
                        (-reach..=reach).flat_map(move |dy| {
                            (-reach..=reach).map(move |dx| c + Cell::new(dx, dy))
                        })
                    })
                    .collect()
            });
            // The cells still ahead of the unit's body: its corridor and their neighbours.
            let from = progress.map_or(0, |p| p.cell_index.saturating_sub(1));
            let rest = &path.corridor[from.min(path.corridor.len())..];
            let crosses = rest
                .iter()
                .any(|c| !grid.is_walkable(*c) || near_changed.contains(c));
            if crosses {
                commands.queue(SubmitInternal {
                    entity,
                    request: path.request.clone(),
                    origin: PathOrigin::GridEdit,
                });
            }
        }
    }
}
