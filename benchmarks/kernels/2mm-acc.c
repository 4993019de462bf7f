/* 2mm without alpha and beta: tmp = A * B; D += tmp * C (fp64) */
void mm2_acc(int ni, int nj, int nk, int nl, double tmp[ni][nj], double A[ni][nk],
             double B[nk][nj], double C[nj][nl], double D[ni][nl]) {
  for (int i = 0; i < ni; i++)
    for (int j = 0; j < nj; j++) {
      tmp[i][j] = 0.0;
      for (int k = 0; k < nk; ++k)
        tmp[i][j] += A[i][k] * B[k][j];
    }
  for (int i = 0; i < ni; i++)
    for (int j = 0; j < nl; j++)
      for (int k = 0; k < nj; ++k)
        D[i][j] += tmp[i][k] * C[k][j];
}
