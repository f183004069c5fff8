# PPO training curves; data in /tmp/ep_out/smollm2_synsciqa_epochs/plots/ppo.dat.
set terminal pngcairo size 800,500 noenhanced
set key outside right top
set grid
set xlabel 'iteration'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/ppo_reward.png'
set title 'PPO reward and its parts'
set ylabel 'mean per answer'
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/ppo.dat' index 0 using 1:2 with linespoints title 'PPO: reward', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/ppo.dat' index 0 using 1:3 with linespoints title 'PPO: precision', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/ppo.dat' index 0 using 1:4 with linespoints title 'PPO: recall'

set output '/tmp/ep_out/smollm2_synsciqa_epochs/plots/ppo_kl.png'
set title 'KL to the reference and its coefficient'
set ylabel 'nats per answer'
set y2label 'beta'
set y2tics
plot '/tmp/ep_out/smollm2_synsciqa_epochs/plots/ppo.dat' index 0 using 1:5 with linespoints title 'PPO: KL (k1)', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/ppo.dat' index 0 using 1:6 with linespoints title 'PPO: KL (k3)', \
     '/tmp/ep_out/smollm2_synsciqa_epochs/plots/ppo.dat' index 0 using 1:7 with linespoints axes x1y2 title 'PPO: beta (right axis)'
unset y2label
unset y2tics
unset output
