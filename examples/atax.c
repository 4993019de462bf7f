/* atax: y = A^T (A x) (PolyBench 4.2) */
void kernel_atax(int m, int n, double A[m][n], double x[n], double y[n], double tmp[m])
{
  for (int i = 0; i < n; i++)
    y[i] = 0;
  for (int i = 0; i < m; i++) {
    tmp[i] = 0.0;
    for (int j = 0; j < n; j++)
      tmp[i] = tmp[i] + A[i][j] * x[j];
    for (int j = 0; j < n; j++)
      y[j] = y[j] + A[i][j] * tmp[i];
  }
}
