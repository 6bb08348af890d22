/* pianoroll.c: piano rolls of primer and continuation: SVG text, or PNG (libpng) from our own rasterizer. */
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/pianoroll.h"
#include "util/fileio.h"
#include "util/log.h"

/* Where things go: one layout shared by both formats. */
typedef struct roll_layout {
    double t0, t_end, t_split;   /* seconds shown, and the primer's end */
    int lo, hi;                  /* pitches shown */
    double W, H, ml, mr, mt, mb; /* picture size and margins, pixels */
    double sx, sy;               /* pixels per second, per semitone */
    double step;                 /* seconds between grid lines */
} roll_layout;

static const uint8_t roll_colour[2][3] = { { 0x1f, 0x77, 0xb4 }, { 0xff, 0x7f, 0x0e } };

static void roll_layout_init(roll_layout *L, const note_list *lists[2], double t_split)
{
    double t_end = t_split;
    int lo = 127, hi = 0;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < lists[k]->n; i++) {
            const note *n = &lists[k]->notes[i];
            t_end = n->release > t_end ? n->release : t_end;
            lo = n->pitch < lo ? n->pitch : lo;
            hi = n->pitch > hi ? n->pitch : hi;
        }
    /* a long primer: show its last part, at least twice the continuation's length */
    double span = 2 * (t_end - t_split) > 15 ? 2 * (t_end - t_split) : 15;
    if (lo > hi) {
        lo = 60;
        hi = 72;
    }
    L->t0 = t_split - span > 0 ? t_split - span : 0;
    L->t_end = t_end;
    L->t_split = t_split;
    L->lo = lo > 2 ? lo - 2 : 0;
    L->hi = hi < 125 ? hi + 2 : 127;
    L->W = 1200, L->H = 480, L->ml = 50, L->mr = 20, L->mt = 30, L->mb = 40;
    L->sx = (L->W - L->ml - L->mr) / (t_end - L->t0 > 0 ? t_end - L->t0 : 1);
    L->sy = (L->H - L->mt - L->mb) / (L->hi - L->lo + 1);
    double len = t_end - L->t0;
    L->step = len > 120 ? 20 : len > 60 ? 10 : len > 20 ? 5 : len > 8 ? 2 : 1;
}

/* The rectangle of note N in pixels (at least 1 x 1, cut at the left edge);
 * 0 when it ends before the picture starts. */
static int note_box(const roll_layout *L, const note *n, double *x, double *y, double *w, double *h)
{
    if (n->release < L->t0)
        return 0;
    double on = n->onset > L->t0 ? n->onset : L->t0;
    *x = L->ml + (on - L->t0) * L->sx;
    *y = L->mt + (L->hi - n->pitch) * L->sy;
    *w = (n->release - on) * L->sx > 1 ? (n->release - on) * L->sx : 1;
    *h = L->sy > 1 ? L->sy : 1;
    return 1;
}

/* ------------------------------------------------------------------ SVG */

/* The attention's lines: from the onset of the note that attended (its
 * box's left middle) to the onset of the one it attended to. */
static void write_svg_links(FILE *fp, const roll_layout *L, const roll_link *links, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const roll_link *k = &links[i];
        if (k->t_from < L->t0)
            continue;
        double x1 = L->ml + (k->t_to - L->t0) * L->sx, y1 = L->mt + (L->hi - k->pitch_to + 0.5) * L->sy;
        double x2 = L->ml + (k->t_from - L->t0) * L->sx, y2 = L->mt + (L->hi - k->pitch_from + 0.5) * L->sy;
        fprintf(fp, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#2ca02c\" "
                    "stroke-opacity=\"%.2f\" stroke-width=\"%.2f\"/>\n",
                x1, y1, x2, y2, 0.15 + 0.85 * k->weight, 0.5 + 2.0 * k->weight);
    }
}

static int write_svg(FILE *fp, const roll_layout *L, const note_list *lists[2], const roll_link *links, size_t n)
{
    fprintf(fp, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", L->W, L->H);
    fprintf(fp, "<text x=\"%.0f\" y=\"18\">primer (blue) and continuation (orange)%s; time in seconds, "
                "pitch as MIDI note number</text>\n", L->ml,
            links ? "; green: for each note played, the earlier notes the model attended to most" : "");
    for (double t = ceil(L->t0 / L->step) * L->step; t <= L->t_end + 1e-9; t += L->step) {
        double x = L->ml + (t - L->t0) * L->sx;
        fprintf(fp, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>"
                    "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n",
                x, L->mt, x, L->H - L->mb, x, L->H - L->mb + 15, t);
    }
    for (int p = (L->lo + 11) / 12 * 12; p <= L->hi; p += 12) {
        double y = L->mt + (L->hi - p + 0.5) * L->sy;
        fprintf(fp, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">C%d (%d)</text>\n", L->ml - 4, y + 4,
                p / 12 - 1, p);
    }
    fprintf(fp, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">seconds</text>\n",
            L->ml + (L->W - L->ml - L->mr) / 2, L->H - 8);
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < lists[k]->n; i++) {
            const note *n = &lists[k]->notes[i];
            double x, y, w, h;
            if (!note_box(L, n, &x, &y, &w, &h))
                continue;
            fprintf(fp, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#%02x%02x%02x\" "
                        "fill-opacity=\"%.2f\"/>\n", x, y, w, h, roll_colour[k][0], roll_colour[k][1],
                    roll_colour[k][2], 0.35 + 0.65 * n->velocity / 127.0);
        }
    if (links)
        write_svg_links(fp, L, links, n);
    double xs = L->ml + (L->t_split - L->t0) * L->sx;
    fprintf(fp, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"black\" stroke-dasharray=\"4 3\"/>\n"
                "</svg>\n", xs, L->mt, xs, L->H - L->mb);
    return 0;
}

/* ------------------------------------------------------------------ PNG */

/* An RGB picture in memory. */
typedef struct canvas {
    int w, h;
    uint8_t *px;    /* w * h * 3 bytes, rows top to bottom; owned */
} canvas;

/* Blends COLOUR with opacity A over the rectangle [x0, x1) x [y0, y1). */
static void fill_rect(canvas *c, double x0, double y0, double x1, double y1, const uint8_t colour[3], double a)
{
    int ix0 = (int)floor(x0), iy0 = (int)floor(y0), ix1 = (int)ceil(x1), iy1 = (int)ceil(y1);
    ix0 = ix0 < 0 ? 0 : ix0, iy0 = iy0 < 0 ? 0 : iy0;
    ix1 = ix1 > c->w ? c->w : ix1, iy1 = iy1 > c->h ? c->h : iy1;
    for (int y = iy0; y < iy1; y++)
        for (int x = ix0; x < ix1; x++) {
            uint8_t *p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
            for (int k = 0; k < 3; k++)
                p[k] = (uint8_t)lround(p[k] * (1 - a) + colour[k] * a);
        }
}

/* Digits for the time axis: 3x5 pixel glyphs, one bit per pixel, rows of 3 bits. */
static const uint16_t digit_glyph[10] = {
    0x7B6F, 0x2C97, 0x73E7, 0x73CF, 0x5BC9, 0x79CF, 0x79EF, 0x7249, 0x7BEF, 0x7BCF,
};

static void draw_number(canvas *c, double cx, double top, int value, int scale)
{
    char text[16];
    int n = snprintf(text, sizeof text, "%d", value);
    double x = cx - (n * 4 - 1) * scale / 2.0;
    static const uint8_t ink[3] = { 0x40, 0x40, 0x40 };
    for (int i = 0; i < n; i++, x += 4 * scale) {
        uint16_t g = digit_glyph[text[i] - '0'];
        for (int r = 0; r < 5; r++)
            for (int col = 0; col < 3; col++)
                if (g >> (14 - (r * 3 + col)) & 1)
                    fill_rect(c, x + col * scale, top + r * scale, x + (col + 1) * scale,
                              top + (r + 1) * scale, ink, 1);
    }
}

/* libpng's error callback: logs once, naming the file, and jumps back to write_png. */
static void on_png_error(png_structp png, png_const_charp msg)
{
    log_error("cannot write %s: %s", (const char *)png_get_error_ptr(png), msg);
    png_longjmp(png, 1);
}

/* Its warnings are not fatal: logged, and the picture is still written. */
static void on_png_warning(png_structp png, png_const_charp msg)
{
    log_warn("%s: libpng: %s", (const char *)png_get_error_ptr(png), msg);
}

/* The picture as a PNG (8-bit RGB, zlib compressed) on FP, the open file
 * PATH.  libpng reports a failure by longjmp; on_png_error has logged it. */
static int write_png(FILE *fp, const char *path, const canvas *c)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, (png_voidp)path, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        log_error("cannot write %s: out of memory", path);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_init_io(png, fp);
    png_set_IHDR(png, info, (png_uint_32)c->w, (png_uint_32)c->h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < c->h; y++)
        png_write_row(png, c->px + (size_t)y * (size_t)c->w * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return 0;
}

static int draw_png(FILE *fp, const char *path, const roll_layout *L, const note_list *lists[2])
{
    canvas c = { (int)L->W, (int)L->H, NULL };
    c.px = malloc((size_t)c.w * (size_t)c.h * 3);
    if (!c.px) {
        log_error("cannot draw %s: out of memory", path);
        return -1;
    }
    memset(c.px, 0xFF, (size_t)c.w * (size_t)c.h * 3);
    static const uint8_t grid[3] = { 0xDD, 0xDD, 0xDD }, black[3] = { 0, 0, 0 };
    double bottom = L->H - L->mb;
    for (double t = ceil(L->t0 / L->step) * L->step; t <= L->t_end + 1e-9; t += L->step) {
        double x = L->ml + (t - L->t0) * L->sx;
        fill_rect(&c, x, L->mt, x + 1, bottom, grid, 1);
        draw_number(&c, x, bottom + 6, (int)lround(t), 2);
    }
    for (int p = (L->lo + 11) / 12 * 12; p <= L->hi; p += 12) {   /* a line under every C */
        double y = L->mt + (L->hi - p + 1) * L->sy;
        fill_rect(&c, L->ml, y, L->W - L->mr, y + 1, grid, 1);
        draw_number(&c, L->ml / 2, y - L->sy / 2 - 5, p, 2);
    }
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < lists[k]->n; i++) {
            const note *n = &lists[k]->notes[i];
            double x, y, w, h;
            if (note_box(L, n, &x, &y, &w, &h))
                fill_rect(&c, x, y, x + w, y + h, roll_colour[k], 0.35 + 0.65 * n->velocity / 127.0);
        }
    double xs = L->ml + (L->t_split - L->t0) * L->sx;
    for (double y = L->mt; y < bottom; y += 7)                  /* dashed: the primer's end */
        fill_rect(&c, xs, y, xs + 1, y + 4 < bottom ? y + 4 : bottom, black, 1);
    int rc = write_png(fp, path, &c);
    free(c.px);
    return rc;
}

/* ------------------------------------------------------------------ entry */

int pianoroll_format_ok(const char *path)
{
    return cli_has_suffix(path, ".svg") || cli_has_suffix(path, ".png");
}

int pianoroll_write(const char *path, const note_list *primer, const note_list *cont, double t_split)
{
    return pianoroll_write_links(path, primer, cont, t_split, NULL, 0);
}

int pianoroll_write_links(const char *path, const note_list *primer, const note_list *cont, double t_split,
                          const roll_link *links, size_t n)
{
    const note_list *lists[2] = { primer, cont };
    roll_layout L;
    atomic_file af;

    if (links && !cli_has_suffix(path, ".svg")) {
        log_error("%s: the attention picture is drawn as SVG: name it FILE.svg", path);
        return -1;
    }
    roll_layout_init(&L, lists, t_split);
    if (atomic_file_open(&af, path) != 0)
        return -1;
    int rc = cli_has_suffix(path, ".png") ? draw_png(af.fp, path, &L, lists) : write_svg(af.fp, &L, lists, links, n);
    if (rc != 0) {
        atomic_file_abort(&af);
        return -1;
    }
    return atomic_file_commit(&af);
}
