"""mcp-exec's matplotlib backend: figures come back as PNG files, as Jupyter would show them.

mcp-exec sets MPLBACKEND=module://mcp_exec_figures when the rootfs ships this file
(/usr/lib/python3/dist-packages). It draws with Agg, and:

- plt.show() saves every open pyplot figure to /tmp/outputs/figure-N.png and closes it, as a
  notebook cell shows its figures and forgets them;
- figures still open when the program exits are saved the same way;
- N counts up from 1 across show() calls, skipping names that exist (another process's
  figures, a file of the program's own);
- the long edge of an image is at most MCP_EXEC_FIGURE_MAX_PX pixels: the figure's dpi is
  lowered to fit, never raised;
- figures with no axes and no lines are skipped, as IPython does.

A figure the program saved itself with savefig is captured too if it is still open at show()
or at exit; plt.close() it after savefig to return only the program's own file.

It runs as the program, with the program's rights: it adds no privilege.
"""
import atexit
import io
import os
import struct
import sys

from matplotlib._pylab_helpers import Gcf
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase

OUTPUT_DIR = "/tmp/outputs"
# mcp-exec's default for MCP_EXEC_FIGURE_MAX_PX, which it always sets: this is only for a
# program that removed the variable.
_DEFAULT_MAX_PX = 1568

_next_number = 1
# A child forked after the figures were made inherits them and this exit handler: only the
# process that loaded the backend saves at exit, or a child that ends with sys.exit() would
# save the parent's figures a second time.
_owner_pid = os.getpid()


def _max_px():
    try:
        value = int(os.environ.get("MCP_EXEC_FIGURE_MAX_PX", _DEFAULT_MAX_PX))
    except ValueError:
        return _DEFAULT_MAX_PX
    return value if value > 0 else _DEFAULT_MAX_PX


def _png_size(png):
    # IHDR is the first chunk: 8 bytes of signature, 4 of length, 4 of type, then width, height.
    return struct.unpack(">II", png[16:24])


def _render(fig, max_px):
    # The dpi comes from the figure's own size, so that a huge figure is never drawn at full
    # size (40x30 in at 200 dpi would be a 190 MB buffer). bbox_inches="tight" as in Jupyter:
    # whitespace is cut, and what sits outside the axes (a legend placed beside them) is kept,
    # which can make the image larger than the figure; it is then drawn again, smaller.
    width_in, height_in = fig.get_size_inches()
    dpi = min(fig.dpi, max_px / max(width_in, height_in))
    for _ in range(3):
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
        png = buffer.getvalue()
        long_edge = max(_png_size(png))
        if long_edge <= max_px:
            return png
        dpi *= 0.99 * max_px / long_edge
    # The figure itself, without the tight box: Agg truncates its pixel size, so it fits.
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=min(fig.dpi, max_px / max(width_in, height_in)))
    return buffer.getvalue()


def _write_new(png):
    """Writes `png` to the next free figure-N.png and returns its path."""
    global _next_number
    os.makedirs(OUTPUT_DIR, exist_ok=True)
    while True:
        path = os.path.join(OUTPUT_DIR, "figure-%d.png" % _next_number)
        _next_number += 1
        try:
            # "x": never overwrite, even a file another process created a moment ago.
            out = open(path, "xb")
        except FileExistsError:
            continue
        try:
            with out:
                out.write(png)
        except BaseException:
            # No half-written image for the collector (a full workspace).
            os.unlink(path)
            raise
        return path


def save_figure(fig):
    """Saves `fig` as the next figure-N.png; returns its path, or None for an empty figure."""
    if not fig.axes and not fig.lines:
        return None
    return _write_new(_render(fig, _max_px()))


def _open_managers():
    # By figure number, whichever the program made current last: pyplot numbers a new figure
    # one above the highest open one, so this is the order they were created in, unless the
    # program chose numbers itself.
    return sorted(Gcf.get_all_fig_managers(), key=lambda manager: manager.num)


def show(*args, **kwargs):
    """pyplot.show(): saves every open figure, then closes it. `block` has no meaning here."""
    for manager in _open_managers():
        try:
            save_figure(manager.canvas.figure)
        finally:
            Gcf.destroy(manager)


def _save_open_figures():
    if os.getpid() != _owner_pid:
        return
    for manager in _open_managers():
        try:
            save_figure(manager.canvas.figure)
        except Exception as e:
            print("mcp_exec_figures: figure %s was not saved: %s: %s"
                  % (manager.num, type(e).__name__, e), file=sys.stderr)


# pyplot imports this module when the program makes its first figure, after matplotlib's own
# exit handler (Gcf.destroy_all) is registered; atexit runs handlers last-in first-out, so
# this one sees the figures before they are destroyed.
atexit.register(_save_open_figures)
