/* 1d-SOR (successive over-relaxation), sequential: seed 001 Fig. 4(a).
   Each sweep k replaces A[i] by the average of its two neighbours, in place. */
void sor_1d(int m, int n, double A[n + 1])
{
  for (int k = 1; k <= m; k++)
    for (int i = 1; i <= n - 1; i++)
      A[i] = (A[i - 1] + A[i + 1]) * 0.5;
}
