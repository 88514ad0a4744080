#!/usr/bin/env python3
"""Draws the RTS demo's textures (no image library needed): assets/tiles.png, a strip of 16x16
tiles (grass, forest, water, wall, road); the same tiles as diamonds for isometric maps
(assets/tiles_iso.png, 32x16 each) and as pointy-top hexagons for hexagonal maps
(assets/tiles_hex.png, 16x18 each); assets/unit.png, a white unit with a nose pointing along
+x that the demo tints per team; and assets/tank.png, a white tank (hull, turret, barrel along
+x), drawn 32x32 for a body two tiles across."""
import random
import struct
import zlib

T = 16


def png(path, w, h, px):
    raw = b"".join(b"\x00" + bytes(v for p in px[y * w:(y + 1) * w] for v in p) for y in range(h))
    def chunk(tag, data):
        c = struct.pack(">I", len(data)) + tag + data
        return c + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))


def clamp(v):
    return max(0, min(255, int(v)))


def tile(kind, rnd):
    out = []
    for y in range(T):
        for x in range(T):
            n = rnd.uniform(-1, 1)
            if kind == "grass":
                c = (86 + 14 * n, 148 + 18 * n, 70 + 10 * n)
                if rnd.random() < 0.06:
                    c = (120, 180, 90)
            elif kind == "forest":
                # dark ground with two tree crowns
                c = (46 + 8 * n, 92 + 10 * n, 44 + 6 * n)
                for (cx, cy, r) in ((5, 5, 4.2), (11, 10, 4.6)):
                    d = ((x - cx) ** 2 + (y - cy) ** 2) ** 0.5
                    if d < r:
                        shade = 1.0 - 0.35 * (d / r)
                        c = (24 * shade + 6 * n, 110 * shade + 8 * n, 38 * shade)
            elif kind == "water":
                wave = 12 if (x + 2 * y) % 9 in (0, 1) else 0
                c = (40 + 6 * n + wave, 96 + 8 * n + wave, 178 + 10 * n + wave)
            elif kind == "wall":
                brick = (y // 4) % 2
                mortar = y % 4 == 0 or (x + 4 * brick) % 8 == 0
                c = (70, 66, 64) if mortar else (128 + 12 * n, 122 + 10 * n, 116 + 10 * n)
            else:  # road
                c = (178 + 10 * n, 156 + 10 * n, 112 + 8 * n)
                if x in (0, T - 1) or y in (0, T - 1):
                    c = (150, 130, 92)
            out.append((clamp(c[0]), clamp(c[1]), clamp(c[2]), 255))
    return out


def diamond(u, v):
    """Whether (u, v) in [0, 1)^2 lies in the diamond touching the box's edge midpoints."""
    return abs(u - 0.5) + abs(v - 0.5) <= 0.5 + 1e-6


def hexagon(u, v):
    """Whether (u, v) lies in the pointy-top hexagon filling the box (corners at the top and
    bottom middle, vertical sides from a quarter to three quarters of the height)."""
    dx, dy = abs(u - 0.5), abs(v - 0.5)
    return dx <= 0.5 and dy <= 0.5 - dx * 0.5 + 1e-6


def shaped(tiles, path, tw, th, inside):
    """The square tiles resampled into tw x th boxes, transparent outside the shape."""
    w = tw * len(tiles)
    px = []
    for y in range(th):
        for x in range(w):
            k, lx = divmod(x, tw)
            u, v = (lx + 0.5) / tw, (y + 0.5) / th
            sx, sy = min(T - 1, int(u * T)), min(T - 1, int(v * T))
            px.append(tiles[k][sy * T + sx] if inside(u, v) else (0, 0, 0, 0))
    png(path, w, th, px)


def main():
    rnd = random.Random(7)
    kinds = ["grass", "forest", "water", "wall", "road"]
    tiles = [tile(k, rnd) for k in kinds]
    w, h = T * len(kinds), T
    px = [tiles[x // T][y * T + x % T] for y in range(h) for x in range(w)]
    png("assets/tiles.png", w, h, px)
    shaped(tiles, "assets/tiles_iso.png", 32, 16, diamond)
    shaped(tiles, "assets/tiles_hex.png", 16, 18, hexagon)

    # Unit: 16x16 white disc with a dark outline and a nose toward +x (the demo tints it).
    S = 16
    unit = []
    for y in range(S):
        for x in range(S):
            dx, dy = x + 0.5 - S / 2, y + 0.5 - S / 2
            d = (dx * dx + dy * dy) ** 0.5
            nose = dx > 2 and abs(dy) < 1.6 and dx < 7.5
            if d < 5.2:
                c = (255, 255, 255, 255)
            elif nose:
                c = (250, 250, 250, 255)
            elif d < 6.6:
                c = (25, 25, 30, 255)
            else:
                c = (0, 0, 0, 0)
            unit.append(c)
    png("assets/unit.png", S, S, unit)

    # Tank: 32x32, a hull with dark tracks, a turret and a barrel toward +x (tinted too).
    S = 32
    tank = []
    for y in range(S):
        for x in range(S):
            dx, dy = x + 0.5 - S / 2, y + 0.5 - S / 2
            turret = (dx * dx + dy * dy) ** 0.5
            hull = abs(dx) < 12.5 and abs(dy) < 10.5
            tracks = hull and abs(dy) > 7.5
            barrel = 4 < dx < 15.5 and abs(dy) < 1.6
            if barrel or turret < 5.0:
                c = (255, 255, 255, 255)
            elif turret < 6.4:
                c = (25, 25, 30, 255)
            elif tracks:
                c = (60, 60, 66, 255)
            elif hull and (abs(dx) > 11.2 or abs(dy) > 6.4):
                c = (25, 25, 30, 255)
            elif hull:
                c = (215, 215, 215, 255)
            else:
                c = (0, 0, 0, 0)
            tank.append(c)
    png("assets/tank.png", S, S, tank)


if __name__ == "__main__":
    main()
