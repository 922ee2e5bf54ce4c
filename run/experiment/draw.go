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
)

// strategyColors are frog report's palette extended to the seven
// curricula.
var strategyColors = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255}, color.RGBA{R: 148, G: 103, B: 189, A: 255},
	color.RGBA{R: 255, G: 127, B: 14, A: 255},
	color.RGBA{R: 140, G: 86, B: 75, A: 255}, color.RGBA{R: 127, G: 127, B: 127, A: 255},
}

// Draw draws the held-out curve of every strategy (the mean over seeds,
// its 95% interval as a band) into curriculum.png and .svg in dir.
func (t Table) Draw(dir string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("held-out solve rate at equal budget (%s)", t.Mode)
	p.X.Label.Text, p.Y.Label.Text = "test executions", "held-out solve rate (mean over seeds, 95% interval)"
	p.Legend.Top, p.Legend.Left = true, true
	for i, r := range t.Rows {
		c := strategyColors[i%len(strategyColors)]
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
		if err := line(p, mid, c, r.Strategy); err != nil {
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

// line adds xy to p as a solid line of colour c named legend (frog
// report's line).
func line(p *plot.Plot, xy plotter.XYs, c color.Color, legend string) error {
	if len(xy) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	p.Add(l)
	if legend != "" {
		p.Legend.Add(legend, l)
	}
	return nil
}
