/* heat-3d.c: PolyBench/C 4.2 stencils/heat-3d, the kernel function as the suite
 * writes it, behind a copy of its header's macros (one dataset chosen with
 * MINI_DATASET, SMALL_DATASET or MEDIUM_DATASET; SMALL when none is). */
#if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET)
# define SMALL_DATASET
#endif

#if !defined(TSTEPS) && !defined(N)
# ifdef MINI_DATASET
#  define TSTEPS 20
#  define N 10
# endif
# ifdef SMALL_DATASET
#  define TSTEPS 40
#  define N 20
# endif
# ifdef MEDIUM_DATASET
#  define TSTEPS 100
#  define N 40
# endif
#endif

#define _PB_TSTEPS POLYBENCH_LOOP_BOUND(TSTEPS,tsteps)
#define _PB_N POLYBENCH_LOOP_BOUND(N,n)

#define DATA_TYPE double
#define DATA_PRINTF_MODIFIER "%0.2lf "
#define SCALAR_VAL(x) x
#define SQRT_FUN(x) sqrt(x)
#define EXP_FUN(x) exp(x)
#define POW_FUN(x,y) pow(x,y)

/* polybench.h's defaults: scalar loop bounds, constant-size arrays */
#define POLYBENCH_LOOP_BOUND(x,y) y
#define POLYBENCH_1D(var,dim1,ddim1) var[dim1]
#define POLYBENCH_2D(var,dim1,dim2,ddim1,ddim2) var[dim1][dim2]
#define POLYBENCH_3D(var,dim1,dim2,dim3,ddim1,ddim2,ddim3) var[dim1][dim2][dim3]

static
void kernel_heat_3d(int tsteps,
                      int n,
                      DATA_TYPE POLYBENCH_3D(A,N,N,N,n,n,n),
                      DATA_TYPE POLYBENCH_3D(B,N,N,N,n,n,n))
{
  int t, i, j, k;

#pragma scop
    for (t = 1; t <= TSTEPS; t++) {
        for (i = 1; i < _PB_N-1; i++) {
            for (j = 1; j < _PB_N-1; j++) {
                for (k = 1; k < _PB_N-1; k++) {
                    B[i][j][k] =   SCALAR_VAL(0.125) * (A[i+1][j][k] - SCALAR_VAL(2.0) * A[i][j][k] + A[i-1][j][k])
                                 + SCALAR_VAL(0.125) * (A[i][j+1][k] - SCALAR_VAL(2.0) * A[i][j][k] + A[i][j-1][k])
                                 + SCALAR_VAL(0.125) * (A[i][j][k+1] - SCALAR_VAL(2.0) * A[i][j][k] + A[i][j][k-1])
                                 + A[i][j][k];
                }
            }
        }
        for (i = 1; i < _PB_N-1; i++) {
           for (j = 1; j < _PB_N-1; j++) {
               for (k = 1; k < _PB_N-1; k++) {
                   A[i][j][k] =   SCALAR_VAL(0.125) * (B[i+1][j][k] - SCALAR_VAL(2.0) * B[i][j][k] + B[i-1][j][k])
                                + SCALAR_VAL(0.125) * (B[i][j+1][k] - SCALAR_VAL(2.0) * B[i][j][k] + B[i][j-1][k])
                                + SCALAR_VAL(0.125) * (B[i][j][k+1] - SCALAR_VAL(2.0) * B[i][j][k] + B[i][j][k-1])
                                + B[i][j][k];
               }
           }
       }
    }
#pragma endscop

}
