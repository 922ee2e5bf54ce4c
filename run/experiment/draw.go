package experiment

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/frognano/frog/run"
	"github.com/frognano/frog/run/chart"
)

// Draw draws the held-out curve of every strategy (the mean over seeds,
// its 95% interval as a band) into curriculum.png and .svg in dir.
func (t Table) Draw(dir string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("held-out solve rate at equal budget (%s)", t.Mode)
	unit, _ := t.unit()
	p.X.Label.Text, p.Y.Label.Text = unit, "held-out solve rate (mean over seeds, 95% interval)"
	p.Legend.Top, p.Legend.Left = true, true
	for i, r := range t.Rows {
		c := chart.Palette[i%len(chart.Palette)]
		var mid, band plotter.XYs
		for k, v := range r.Curve {
			if k >= len(r.CurveX) {
				break
			}
			mid = append(mid, plotter.XY{X: float64(r.CurveX[k]), Y: v.Mean})
			band = append(band, plotter.XY{X: float64(r.CurveX[k]), Y: v.Hi})
		}
		for k := min(len(r.Curve), len(r.CurveX)) - 1; k >= 0; k-- {
			band = append(band, plotter.XY{X: float64(r.CurveX[k]), Y: r.Curve[k].Lo})
		}
		if poly, err := plotter.NewPolygon(band); err == nil && r.Seeds > 1 {
			rgba := color.NRGBAModel.Convert(c).(color.NRGBA)
			rgba.A = 50
			poly.Color = rgba
			poly.LineStyle.Width = 0
			p.Add(poly)
		}
		if err := chart.Line(p, mid, c, false, r.Strategy); err != nil {
			return err
		}
	}
	w, h := 20*vg.Centimeter, 13*vg.Centimeter
	img := vgimg.New(w, h)
	p.Draw(draw.New(img))
	svg := vgsvg.New(w, h)
	p.Draw(draw.New(svg))
	for name, wt := range map[string]io.WriterTo{"curriculum.png": vgimg.PngCanvas{Canvas: img}, "curriculum.svg": svg} {
		var buf bytes.Buffer
		if _, err := wt.WriteTo(&buf); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := run.WriteFileAtomic(filepath.Join(dir, name), buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
