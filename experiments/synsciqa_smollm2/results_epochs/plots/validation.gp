# Metric vs. epoch on test set validation; data in /tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat.
set terminal pngcairo size 800,500 noenhanced
set key outside right top
set grid
set xlabel 'epoch'
set xrange [-0.2:3.2]
set xtics 1

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_precision.png'
set title 'validation: precision'
set ylabel 'precision'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:2 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:2:3:4 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:2:3:4 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_recall.png'
set title 'validation: recall'
set ylabel 'recall'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:5 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:5:6:7 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:5:6:7 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_f1.png'
set title 'validation: f1'
set ylabel 'f1'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:8 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:8:9:10 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:8:9:10 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_reward.png'
set title 'validation: reward'
set ylabel 'reward'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:11 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:11:12:13 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:11:12:13 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_answer_length.png'
set title 'validation: answer_length'
set ylabel 'answer_length'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:14 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:14:15:16 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:14:15:16 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_distinct_citations.png'
set title 'validation: distinct_citations'
set ylabel 'distinct_citations'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:17 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:17:18:19 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:17:18:19 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_invalid_citations.png'
set title 'validation: invalid_citations'
set ylabel 'invalid_citations'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:20 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:20:21:22 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:20:21:22 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_source_quality.png'
set title 'validation: source_quality'
set ylabel 'source_quality'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:23 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:23:24:25 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:23:24:25 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_source_quality_paper.png'
set title 'validation: source_quality_paper'
set ylabel 'source_quality_paper'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:26 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:26:27:28 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:26:27:28 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_format_quality.png'
set title 'validation: format_quality'
set ylabel 'format_quality'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:29 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:29:30:31 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:29:30:31 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_chance_precision.png'
set title 'validation: chance_precision'
set ylabel 'chance_precision'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:32 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:32:33:34 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:32:33:34 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_chance_recall.png'
set title 'validation: chance_recall'
set ylabel 'chance_recall'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:35 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:35:36:37 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:35:36:37 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_chance_f1.png'
set title 'validation: chance_f1'
set ylabel 'chance_f1'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:38 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:38:39:40 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:38:39:40 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_chance_reward.png'
set title 'validation: chance_reward'
set ylabel 'chance_reward'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:41 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:41:42:43 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:41:42:43 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_chance_source_quality.png'
set title 'validation: chance_source_quality'
set ylabel 'chance_source_quality'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:44 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:44:45:46 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:44:45:46 with yerrorlines linewidth 2 title 'PPO'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation_chance_source_quality_paper.png'
set title 'validation: chance_source_quality_paper'
set ylabel 'chance_source_quality_paper'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 0 using 1:47 with lines dashtype 2 linewidth 2 linecolor 'black' title 'Base', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 1 using 1:47:48:49 with yerrorlines linewidth 2 title 'SFT', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/validation.dat' index 2 using 1:47:48:49 with yerrorlines linewidth 2 title 'PPO'
unset output
