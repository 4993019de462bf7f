/* 1d-SOR kept sequential (seed 001 Fig. 4(a) plus a wrap-around boundary): every
   sweep k starts from the value the previous sweep left next to the right end, so
   sweeps cannot overlap (no wavefront) and the nest runs in one thread.
   `--localise i` keeps A[i-1], A[i], A[i+1] in three slots of L (ρ = x − i + 1). */
void sor_1d_seq(int m, int n, double A[n + 1])
{
  for (int k = 1; k <= m; k++) {
    A[0] = A[n - 1] * 0.5;
    for (int i = 1; i <= n - 1; i++)
      A[i] = (A[i - 1] + A[i + 1]) * 0.5;
  }
}
