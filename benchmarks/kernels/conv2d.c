/* conv2d: 3x3 convolution of a 2-d image (a stencil without time loop) */
void conv2d(int ni, int nj, double A[ni][nj], double B[ni][nj])
{
  for (int i = 1; i < ni - 1; i++)
    for (int j = 1; j < nj - 1; j++)
      B[i][j] = 0.2 * A[i-1][j-1] + 0.5 * A[i-1][j] - 0.8 * A[i-1][j+1]
              - 0.3 * A[i][j-1] + 0.6 * A[i][j] - 0.9 * A[i][j+1]
              + 0.4 * A[i+1][j-1] + 0.7 * A[i+1][j] + 0.1 * A[i+1][j+1];
}
